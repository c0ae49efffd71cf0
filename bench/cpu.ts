// Where the CPU went while the bench measured: this process (the load generator), the API processes, PostgreSQL,
// the Temporal server and the machine, read from /proc (Linux); and a CPU profile of this process on request.
import fs from 'node:fs';
import inspector from 'node:inspector/promises';
import path from 'node:path';

export interface CpuAccount {
  load: number;
  api: number;
  postgres: number;
  /** The whole machine over the cell, in % of all cores' time (/proc/stat): idle, interrupts, stolen by the host. */
  machine?: { idle: number; irq: number; steal: number };
}

/** /proc/stat's aggregate line: user nice system idle iowait irq softirq steal, in ticks; undefined without it. */
function machineTicks(): number[] | undefined {
  try {
    const line = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0];
    return line.trim().split(/\s+/).slice(1, 9).map(Number);
  } catch {
    return undefined;
  }
}

function machineShare(before: number[] | undefined, after: number[] | undefined): CpuAccount['machine'] {
  if (!before || !after) return undefined;
  const d = after.map((v, i) => v - before[i]);
  const total = d.reduce((a, b) => a + b, 0);
  if (!total) return undefined;
  const pct = (x: number) => (x / total) * 100;
  return { idle: pct(d[3] + d[4]), irq: pct(d[5] + d[6]), steal: pct(d[7]) };
}

/**
 * CPU seconds of each process with this command name by pid (`postgres`: the postmaster, backends and background
 * workers; `temporal`: the dev server), or undefined without /proc.
 */
function processSeconds(comm = 'postgres'): Map<number, number> | undefined {
  try {
    const byPid = new Map<number, number>();
    for (const entry of fs.readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        if (fs.readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== comm) continue;
        const seconds = cpuSeconds(Number(entry));
        if (seconds !== undefined) byPid.set(Number(entry), seconds);
      } catch {
        // the process ended while we looked
      }
    }
    return byPid;
  } catch {
    return undefined;
  }
}

/** CPU the processes of a reading used since an earlier one: processes started meanwhile count whole, ended ones are lost. */
function secondsDelta(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, seconds] of after) total += Math.max(0, seconds - (before.get(pid) ?? 0));
  return total;
}

/** CPU per unit of work (µs) by process since a reading started, and the machine's idle share meanwhile. */
export interface CpuReading extends CpuAccount {
  /** The Temporal dev server. */
  temporal: number;
}

/**
 * Starts a reading of CPU time: the bench process itself (`load`), the API processes, PostgreSQL, the Temporal
 * server and the machine. Calling what it returns with the number of requests or workflows served meanwhile gives
 * each per unit (undefined without /proc).
 */
export function cpuReading(): (n: number) => CpuReading | undefined {
  const self0 = process.cpuUsage();
  const api0 = apiSeconds();
  const pg0 = processSeconds();
  const temporal0 = processSeconds('temporal');
  const machine0 = machineTicks();
  return (n) => {
    const machine = machineShare(machine0, machineTicks());
    const self = process.cpuUsage(self0);
    const api1 = apiSeconds();
    const pg1 = processSeconds();
    const temporal1 = processSeconds('temporal');
    if (!n || !pg0 || !pg1) return undefined;
    return {
      load: (self.user + self.system) / n,
      api: api0 !== undefined && api1 !== undefined ? ((api1 - api0) * 1e6) / n : 0,
      postgres: (secondsDelta(pg0, pg1) * 1e6) / n,
      temporal: temporal0 && temporal1 ? (secondsDelta(temporal0, temporal1) * 1e6) / n : 0,
      machine,
    };
  };
}

/** Where the CPU went while `run` served `count()` requests: the figures that bound a CPU-bound ratio. */
export async function cpuAccount<T>(
  run: () => Promise<T>,
  count: (r: T) => number,
): Promise<[T, CpuAccount | undefined]> {
  const reading = cpuReading();
  const result = await run();
  return [result, reading(count(result))];
}

/**
 * With BENCH_PROFILE_DRAIN=dir, a CPU profile of the bench process's main thread (the worker's activities and
 * Temporal plumbing, the receiver) from now until the returned function is called, written to dir/<label>.cpuprofile.
 */
export async function profileMain(label: string): Promise<() => Promise<void>> {
  const dir = process.env.BENCH_PROFILE_DRAIN;
  if (!dir) return async () => {};
  const session = new inspector.Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return async () => {
    const { profile } = await session.post('Profiler.stop');
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, `${label}.cpuprofile`), JSON.stringify(profile));
    session.disconnect();
  };
}

export const workflowCpuLine = (c: CpuReading | undefined) =>
  c
    ? `  CPU per workflow     ${[c.load, c.temporal, c.postgres, c.api].map((x) => x.toFixed(0)).join(' / ')} µs ` +
      `(bench process: worker and receiver / Temporal server / PostgreSQL / API), total ` +
      `${(c.load + c.temporal + c.postgres + c.api).toFixed(0)} µs; machine idle ${c.machine?.idle.toFixed(0) ?? '?'}%\n`
    : '';

/** The API processes' pids, once started: their CPU time per request is read from /proc (Linux). */
let apiPids: number[] = [];

/** Called once the API processes run: from then on their CPU is read beside each measurement. */
export function watchApiProcesses(pids: number[]): void {
  apiPids = pids;
}

/** Whether the API processes' CPU is read (their pids are known). */
export const apiWatched = () => apiPids.length > 0;

/** CPU seconds the API processes have used so far, together. */
function apiSeconds(): number | undefined {
  let total = 0;
  for (const pid of apiPids) {
    const seconds = cpuSeconds(pid);
    if (seconds === undefined) return undefined;
    total += seconds;
  }
  return apiPids.length ? total : undefined;
}

/** CPU seconds (user + system) a process has used so far, or undefined where /proc is not there. */
function cpuSeconds(pid: number | undefined): number | undefined {
  if (!pid) return undefined;
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}
/** Linux's USER_HZ, the unit of /proc/<pid>/stat times; 100 on every common build. */
const CLOCK_TICKS = 100;
