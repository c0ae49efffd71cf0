import json, re, subprocess, sys
files = sys.argv[1:]
out = subprocess.run(['npx','eslint','-f','json',*files],capture_output=True,text=True).stdout
for r in json.loads(out):
    msgs=[m for m in r['messages'] if m.get('ruleId')=='@typescript-eslint/no-unused-vars']
    if not msgs: continue
    src=open(r['filePath']).read()
    for m in msgs:
        name=re.search(r"'([^']+)' is defined", m['message']).group(1)
        # find import statement containing the name
        def fix(mm):
            stmt=mm.group(0)
            inner=re.search(r'\{([^}]*)\}',stmt)
            if inner:
                parts=[p.strip() for p in inner.group(1).split(',') if p.strip()]
                keep=[p for p in parts if re.sub(r'^type ','',p).split(' as ')[-1].strip()!=name]
                if len(keep)==len(parts): pass
                else:
                    if not keep and not re.match(r'import (type )?\w+\s*,',stmt): return ''
                    return stmt.replace(inner.group(0),'{ '+', '.join(keep)+' }')
            m2=re.match(r"import (type )?(\w+) from",stmt)
            if m2 and m2.group(2)==name: return ''
            m3=re.match(r"import (type )?\* as (\w+) from",stmt)
            if m3 and m3.group(2)==name: return ''
            return stmt
        src=re.sub(r"^import [^;]*?from '[^']+';\n", fix, src, flags=re.M)
    open(r['filePath'],'w').write(src)
