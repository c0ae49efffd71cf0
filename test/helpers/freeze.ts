// Freezing a server as an outage does: SIGSTOP of its process and every descendant (PostgreSQL's backends, for
// one). A frozen server keeps its sockets: the kernel still accepts connections and takes in what is sent, and
// nothing ever answers. SIGCONT resumes them. Linux (/proc).
import fs from 'node:fs';

/** The process ids whose parent is `pid`. */
function children(pid: number): number[] {
  const found: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // stat: "pid (comm) state ppid ..."; comm may hold spaces and parentheses, so read after the last ')'.
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) found.push(Number(entry));
    } catch {
      /* exited meanwhile */
    }
  }
  return found;
}

/**
 * Stops `pid` and all its descendants; returns them for `thaw`. The parent first, so it forks nothing new while its
 * children are looked up.
 */
export function freeze(pid: number): number[] {
  const stopped: number[] = [];
  const stop = (p: number) => {
    try {
      process.kill(p, 'SIGSTOP');
      stopped.push(p);
    } catch {
      /* exited meanwhile */
    }
    for (const c of children(p)) stop(c);
  };
  stop(pid);
  return stopped;
}

/** Resumes what `freeze` stopped. */
export function thaw(pids: number[]): void {
  for (const p of [...pids].reverse()) {
    try {
      process.kill(p, 'SIGCONT');
    } catch {
      /* exited meanwhile */
    }
  }
}
