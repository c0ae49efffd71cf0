// Child processes the fault scripts supervise (`npm run topology`, `npm run chaos -- billing`): each started with its
// settings and a log file of its own, waited for until it prints its ready line, SIGKILLed (or frozen) and started
// again with the same settings.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { serviceArgs } from './build-service.js';

export const ROOT = path.resolve(import.meta.dirname, '..');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * What a service process started with settings of its own keeps of this process's environment: PATH, HOME and, when
 * set, NODE_COMPILE_CACHE (`npm test` sets it: Node keeps the V8 code of every module it compiles on disk, so the
 * many starts of the same service in a run load it without compiling it again).
 */
export function childEnv(): Record<string, string> {
  const { PATH = '', HOME = '', NODE_COMPILE_CACHE } = process.env;
  return { PATH, HOME, ...(NODE_COMPILE_CACHE ? { NODE_COMPILE_CACHE } : {}) };
}

export class Proc {
  child: ChildProcess | null = null;
  starts = 0;
  constructor(
    readonly name: string,
    private readonly command: string,
    private readonly argv: string[],
    private readonly env: Record<string, string>,
    private readonly logFile: string,
    private readonly ready: RegExp | null,
  ) {}

  get alive() {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }

  get pid(): number | null {
    return this.alive ? (this.child!.pid ?? null) : null;
  }

  /** Starts it and waits for its ready line (when it has one), at most `timeoutMs`. */
  async start(timeoutMs = 180_000): Promise<void> {
    const log = fs.createWriteStream(this.logFile, { flags: 'a' });
    log.write(`\n---- start ${++this.starts} at ${new Date().toISOString()}\n`);
    const child = spawn(this.command, this.argv, {
      cwd: ROOT,
      env: { ...childEnv(), ...this.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    let seen = '';
    const watch = (d: Buffer) => {
      log.write(d);
      if (this.ready && seen.length < 200_000) seen += d.toString();
    };
    child.stdout!.on('data', watch);
    child.stderr!.on('data', watch);
    child.on('exit', () => log.end());
    if (!this.ready) return;
    const end = Date.now() + timeoutMs;
    while (!this.ready.test(seen)) {
      if (child.exitCode !== null || child.signalCode !== null)
        throw new Error(`${this.name} exited while starting; its log is ${this.logFile}`);
      if (Date.now() > end) throw new Error(`${this.name} did not start within ${timeoutMs} ms; see ${this.logFile}`);
      await sleep(100);
    }
  }

  /**
   * `start`, again when the process exits while starting (on a machine this busy a start-up's first connection to
   * PostgreSQL can time out): at most `tries` times.
   */
  async startRetrying(tries = 3, timeoutMs?: number): Promise<void> {
    for (let i = 1; ; i++) {
      try {
        return await this.start(timeoutMs);
      } catch (err) {
        if (i >= tries || this.alive) throw err;
        await sleep(1000);
      }
    }
  }

  kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const child = this.child;
    if (!child || !this.alive) return Promise.resolve();
    return new Promise((resolve) => {
      child.once('exit', () => resolve());
      child.kill(signal);
    });
  }
}

/**
 * An offerkit process (`src/api.ts` or `src/worker.ts`, from the bundle `npm run start:api` runs: build it first with
 * scripts/build-service.ts), ready when it logs that it listens or runs.
 */
export function serviceProc(name: string, kind: 'api' | 'worker', env: Record<string, string>, dir: string): Proc {
  return new Proc(
    name,
    process.execPath,
    serviceArgs(kind),
    env,
    path.join(dir, `${name}.log`),
    kind === 'api' ? /API listening/ : /worker running/,
  );
}
