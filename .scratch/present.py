import re, sys, os, json
# usage: present.py service.ts present.ts name1 name2 ...
svc, dst, names = sys.argv[1], sys.argv[2], sys.argv[3:]
s = open(svc).read()
lines = s.split('\n')
def block_bounds(name):
    # first line of the declaration (incl. overloads) and preceding doc comment
    idxs = [i for i,l in enumerate(lines) if re.match(r'^(export )?(async )?function '+name+r'\b', l)]
    if not idxs: raise SystemExit(f'no {name}')
    start = idxs[0]
    while start>0 and (lines[start-1].startswith(' *') or lines[start-1].startswith('/**') or lines[start-1].startswith('//')):
        start -= 1
    # end: from the last decl, find first line == '}' at column 0
    i = idxs[-1]
    while lines[i] != '}': i += 1
    return start, i
ranges = sorted(block_bounds(n) for n in names)
moved = []
for a,b in reversed(ranges):
    moved.insert(0, '\n'.join(lines[a:b+1]))
    del lines[a:b+1]
    if a < len(lines) and lines[a] == '' and a>0 and lines[a-1]=='': del lines[a]
body = '\n\n'.join(moved)
# make non-exported presenters exported
body = re.sub(r'^function (present)', r'export function \1', body, flags=re.M)
rest = '\n'.join(lines)
# imports
imp_re = re.compile(r"^import (type )?([\s\S]*?) from '([^']+)';\n", re.M)
imports = []
for m in imp_re.finditer(s):
    imports.append((m.group(0), m.group(1), m.group(2), m.group(3)))
out_imports = []
for full, typ, what, src in imports:
    src2 = src
    names_ = []
    what = what.strip()
    default = None; ns = None; named = []
    if what.startswith('* as '):
        ns = what[5:].strip()
    else:
        mm = re.match(r'^([A-Za-z_$][\w$]*)?\s*,?\s*(\{[\s\S]*\})?$', what)
        if mm:
            default = mm.group(1)
            if mm.group(2):
                for part in mm.group(2).strip('{}').split(','):
                    part = part.strip()
                    if part: named.append(part)
    used = lambda n: re.search(r'(?<![\w$.])'+re.escape(n)+r'(?![\w$])', body) is not None
    keep_named = [p for p in named if used(re.sub(r'^type ', '', p).split(' as ')[-1].strip())]
    parts = []
    if default and used(default): parts.append(default)
    if ns and used(ns): out_imports.append(f"import {typ or ''}* as {ns} from '{src}';"); continue
    if keep_named: parts.append('{ ' + ', '.join(keep_named) + ' }')
    if parts: out_imports.append(f"import {typ or ''}{', '.join(parts)} from '{src}';")
# top-level locals of the service used by the body
locals_ = set(re.findall(r'^(?:export )?(?:const|function|async function|let|type|interface|class) ([A-Za-z_$][\w$]*)', rest, re.M))
needed = sorted(n for n in locals_ if re.search(r'(?<![\w$.])'+re.escape(n)+r'(?![\w$])', body))
header = '// Presenters: entities to the spec\'s JSON, pure, beside the schemas they produce.\n'
content = header + '\n'.join(out_imports) + '\n\n' + body + '\n'
if os.path.exists(dst):
    content = open(dst).read().rstrip('\n') + '\n\n' + '\n'.join(out_imports) + '\n\n' + body + '\n'
open(dst, 'w').write(content)
# service: import back presenters it still uses
still = [n for n in names if re.search(r'(?<![\w$.])'+n+r'(?![\w$])', rest)]
base = './' + os.path.basename(dst).replace('.ts', '.js')
if still:
    # insert after last import
    ms = list(imp_re.finditer(rest))
    pos = ms[-1].end() if ms else 0
    rest = rest[:pos] + f"import {{ {', '.join(still)} }} from '{base}';\n" + rest[pos:]
open(svc, 'w').write(rest)
print(json.dumps({'needs_locals': needed, 'service_still_uses': still}))
