#!/usr/bin/env python3
# CPU-seconds (utime+stime from /proc/<pid>/stat) a command's whole process tree spent, by process kind: the test
# runner and API (node), Chromium, PostgreSQL, the Temporal dev server, esbuild, tsc... Other runs on the machine
# change wall time a lot and these figures little, so compare these (docs/testing.md, "How CI stays fast").
#   TEST_FILES=test/browser/console-ops.test.ts python3 scripts/cpu-by-kind.py npx mocha
# It samples every 0.3 s, so a process that lives less than that is missed and the last 0.3 s of each is not counted.
import os
import subprocess
import sys
import time

HZ = os.sysconf('SC_CLK_TCK')
ROOT = os.getcwd()
KINDS = [('postgres', ['postgres']), ('temporal', ['temporal']), ('chromium', ['chrom']),
         ('python', ['python', 'schemathesis']), ('esbuild', ['esbuild']), ('tsc', ['tsc']),
         ('eslint', ['eslint']), ('prettier', ['prettier']), ('helm', ['helm']), ('node', ['node', 'npm', 'tsx'])]


def kind(cmd):
    # Paths under the project say nothing of the kind: a checkout in /work/wt-chromium would count as Chromium.
    cmd = cmd.replace(ROOT, '.')
    words = cmd.split()
    # The program first (a mocha process whose file list names temporal.test.ts is not the Temporal server), then
    # the script a node, python or shell runs.
    exe = words[0].split('/')[-1] if words else ''
    for name, patterns in KINDS:
        if name != 'node' and any(p in exe for p in patterns):
            return name
    for name, patterns in KINDS:
        if any(p in ' '.join(words[:3]) for p in patterns):
            if name == 'node':
                if 'mocha' in ' '.join(words[:4]):
                    return 'node: mocha'
                return 'node: ' + ' '.join(w.split('/')[-1] for w in words[1:4])[:60]
            return name
    return 'other: ' + cmd[:30]


def sample(root, seen):
    stats = {}
    for p in os.listdir('/proc'):
        if not p.isdigit():
            continue
        try:
            st = open(f'/proc/{p}/stat').read()
            fields = st[st.rindex(')') + 2:].split()
            stats[int(p)] = (int(fields[1]), int(fields[11]) + int(fields[12]))
        except OSError:
            pass
    tree, grew = {root}, True
    while grew:
        grew = False
        for p, (parent, _) in stats.items():
            if parent in tree and p not in tree:
                tree.add(p)
                grew = True
    for p in tree & stats.keys():
        try:
            cmd = open(f'/proc/{p}/cmdline').read().replace('\0', ' ')
        except OSError:
            continue
        # An exec keeps the pid: keep the latest command line and the highest reading.
        seen[p] = (cmd or seen.get(p, ('', 0))[0], max(seen.get(p, ('', 0))[1], stats[p][1]))


def main():
    proc = subprocess.Popen(sys.argv[1:])
    seen, started = {}, time.time()
    while proc.poll() is None:
        sample(proc.pid, seen)
        time.sleep(0.3)
    totals = {}
    for cmd, ticks in seen.values():
        totals[kind(cmd)] = totals.get(kind(cmd), 0) + ticks / HZ
    print(f'== {time.time() - started:.0f} s wall, exit {proc.returncode}', file=sys.stderr)
    for name, seconds in sorted(totals.items(), key=lambda x: -x[1]):
        print(f'{name:60s} {seconds:7.1f} cpu-s', file=sys.stderr)
    sys.exit(proc.returncode)


main()
