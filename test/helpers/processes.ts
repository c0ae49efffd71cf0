// Real service processes (`src/api.ts`, `src/worker.ts`), for tests that need several processes on the same servers
// or a process they can kill, and the wait until one is ready.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { serviceArgs } from '../../scripts/build-service.js';
import { childEnv } from '../../scripts/procs.js';
import { tempDir, testEnv } from './servers.js';

const root = path.resolve(import.meta.dirname, '../..');

/** A started process and everything it has printed so far (stdout and stderr). */
export interface Started {
  child: ChildProcess;
  output: () => string;
}

/** The service's entry points, run from its bundle as `npm start` runs them (scripts/build-service.ts). */
const BUNDLED = { 'src/api.ts': 'api', 'src/worker.ts': 'worker', 'src/main.ts': 'main' } as const;

/**
 * Starts a script of this project with `env` (on top of PATH and HOME; LOG_LEVEL info unless set): the service's
 * entry points from the bundle the root hook built (test/helpers/hooks.ts), any other script under tsx.
 */
export function startProcess(script: string, env: Record<string, string>): Started {
  const bundled = BUNDLED[script as keyof typeof BUNDLED];
  const child = spawn(process.execPath, bundled ? serviceArgs(bundled) : ['--import', 'tsx', script], {
    cwd: root,
    env: { ...childEnv(), LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return { child, output: () => out };
}

/** An API process (`npm run start:api`). */
export const startApi = (env: Record<string, string>): Started => startProcess('src/api.ts', env);

/** A worker process (`npm run start:worker`). */
export const startWorker = (env: Record<string, string>): Started => startProcess('src/worker.ts', env);

/**
 * The environment of an API or worker process on the suite's PostgreSQL and Temporal (its task queue too), listening
 * on `port` of the loopback address with a data folder of its own; `env` adds to it or overrides it.
 */
export function serviceEnv(port: number, env: Record<string, string> & { ADMIN_API_KEY: string }) {
  const { config } = testEnv();
  return {
    DATABASE_URL: config.databaseUrl,
    TEMPORAL_ADDRESS: config.temporalAddress,
    TEMPORAL_TASK_QUEUE: config.TEMPORAL_TASK_QUEUE,
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: tempDir('offerkit-process-'),
    ...env,
  };
}

/** True once the child has exited, by itself or by a signal (then its exit code stays null). */
const ended = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null;

/**
 * Resolves once the process has printed `text`; fails with its output when it exits first or after `ms`. The line
 * is logged at level info, so a process started with LOG_LEVEL=warn must be waited for otherwise (its /health).
 */
export async function waitForOutput(p: Started, text: string, ms = 90_000): Promise<void> {
  const end = Date.now() + ms;
  while (!p.output().includes(text)) {
    if (ended(p.child))
      throw new Error(`exited (${p.child.exitCode ?? p.child.signalCode}) before "${text}":\n${p.output()}`);
    if (Date.now() > end) throw new Error(`no "${text}" after ${ms} ms:\n${p.output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Starts a process with `start` and waits for `text`; starts it again when it exits first (on a busy machine a
 * start-up's first connection to PostgreSQL can pass its 2 s bound), at most `tries` times in all.
 */
export async function startReady(start: () => Started, text: string, tries = 3, ms = 90_000): Promise<Started> {
  for (let i = 1; ; i++) {
    const p = start();
    try {
      await waitForOutput(p, text, ms);
      return p;
    } catch (err) {
      if (i >= tries || !ended(p.child)) throw err;
    }
  }
}

/** Resolves once an API process listens (it logs "API listening" when its port is open). */
export const waitForListening = (p: Started, ms?: number) => waitForOutput(p, 'API listening', ms);

/** Resolves with the exit code (null after a signal) once the process has exited, without stopping it. */
export function exited(p: Started): Promise<number | null> {
  if (ended(p.child)) return Promise.resolve(p.child.exitCode);
  return new Promise((resolve) => p.child.once('exit', (code) => resolve(code)));
}

/** Stops a child with SIGTERM and resolves with its exit code (null after a signal) once it has exited. */
export const stopped = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    if (ended(child)) return resolve(child.exitCode);
    child.once('exit', (code) => resolve(code));
    child.kill('SIGTERM');
  });
