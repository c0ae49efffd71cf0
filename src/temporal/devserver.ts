import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { SA } from '../../workflows/shared.js';
import { toolsDir } from '../tools.js';
import type { Logger } from '../logger.js';

export const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal@v1.5.1';
/** Where the CLI is built once when it is not on PATH: a folder of its version in the tools folder (src/tools.ts). */
export const toolsBin = () => path.join(toolsDir(), `temporal-cli-${TEMPORAL_CLI_MODULE.split('@')[1]}`, 'bin');

function onPath(cmd: string): string | undefined {
  const r = spawnSync('/bin/sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' });
  const found = r.stdout.trim();
  return r.status === 0 && found ? found : undefined;
}

/**
 * Finds the Temporal CLI: `TEMPORAL_CLI`, then PATH, then the tools folder (the machine's, src/tools.ts); otherwise
 * builds it there with `go install` from the Go module proxy (a few minutes, once per machine).
 */
export function ensureTemporalCli(
  explicit: string | undefined,
  logger: Logger,
  where: { toolsBin?: string } = {},
): string {
  if (explicit) {
    if (!fs.existsSync(explicit)) throw new Error(`TEMPORAL_CLI points at ${explicit}, which does not exist`);
    return explicit;
  }
  const found = onPath('temporal');
  if (found) return found;
  // Only now the tools folder: a CLI given or on PATH leaves the home folder as it was.
  const bin = where.toolsBin ?? toolsBin();
  const local = path.join(bin, 'temporal');
  if (fs.existsSync(local)) return local;
  if (!onPath('go')) {
    throw new Error(
      'The Temporal CLI was not found. Install it (https://docs.temporal.io/cli) and put it on PATH or set ' +
        'TEMPORAL_CLI, ' +
        `or install Go 1.23+ so it can be built with: go install ${TEMPORAL_CLI_MODULE}. ` +
        'Alternatively set TEMPORAL_ADDRESS to use a Temporal server you already run.',
    );
  }
  logger.info(
    { into: bin },
    `building the Temporal CLI once with go install ${TEMPORAL_CLI_MODULE} (takes a few minutes)`,
  );
  fs.mkdirSync(bin, { recursive: true });
  const r = spawnSync('go', ['install', TEMPORAL_CLI_MODULE], {
    env: { ...process.env, GOBIN: bin, GOFLAGS: '-mod=mod' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (r.status !== 0 || !fs.existsSync(local))
    throw new Error(`go install ${TEMPORAL_CLI_MODULE} failed (exit ${r.status})`);
  return local;
}

/** True when something accepts TCP connections on the port. */
export function portOpen(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ port, host });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

export interface DevServerHandle {
  address: string;
  uiUrl: string | null;
  owned: boolean;
  /** The dev server's process id (null when the server is not ours). */
  pid: number | null;
  /** False once the server this process started has exited (always true for one that is not ours). */
  alive(): boolean;
  stop(): Promise<void>;
}

const SA_CLI_TYPE: Record<string, string> = {
  KEYWORD: 'Keyword',
  DATETIME: 'Datetime',
  TEXT: 'Text',
  INT: 'Int',
  DOUBLE: 'Double',
  BOOL: 'Bool',
  KEYWORD_LIST: 'KeywordList',
};

/**
 * Starts `temporal server start-dev` bound to 127.0.0.1 with the service's search attributes.
 * `dbFile` keeps workflow state across restarts (SQLite); without it state lives in memory.
 */
export async function startTemporalDevServer(opts: DevServerOptions): Promise<DevServerHandle> {
  // The dev server picks some ports of its own (the HTTP API and each service's membership port among them)
  // and can lose one to another process between choosing and binding it: it then says "address already in
  // use", or panics while starting (Go's exit code 2). That is worth another try; anything else is not.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(opts);
    } catch (err) {
      const retryable =
        err instanceof StartFailed && (err.code === 2 || err.message.includes('address already in use'));
      if (!retryable || attempt >= 3 || (await portOpen(opts.port))) throw err;
      opts.logger.warn(
        { attempt, exitCode: err.code, firstLine: err.firstLine },
        'Temporal dev server failed while starting (a port it picked may have been taken); starting it again',
      );
    }
  }
}

type DevServerOptions = Parameters<typeof startOnce>[0];

/** The dev server exited before opening its port; the message keeps the start and the end of what it printed. */
export class StartFailed extends Error {
  constructor(
    readonly code: number | null,
    readonly stderr: { head: string; tail: string },
  ) {
    const both = stderr.tail.startsWith(stderr.head) ? stderr.tail : `${stderr.head}\n…\n${stderr.tail}`;
    super(`temporal server start-dev exited with ${code}: ${both}`);
  }
  get firstLine(): string {
    return this.stderr.head.split('\n').find((l) => l.trim() !== '') ?? '';
  }
}

async function startOnce(opts: {
  cli: string;
  port: number;
  uiPort: number | null;
  namespace: string;
  dbFile?: string;
  logger: Logger;
}): Promise<DevServerHandle> {
  const address = `127.0.0.1:${opts.port}`;
  const uiUrl = opts.uiPort === null ? null : `http://127.0.0.1:${opts.uiPort}`;
  const log = opts.logger.child({ component: 'temporal-dev-server' });
  if (await portOpen(opts.port)) {
    log.info({ address }, 'reusing the Temporal server already listening on this port');
    return { address, uiUrl, owned: false, pid: null, alive: () => true, stop: async () => undefined };
  }
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(opts.port),
    '--log-level',
    'error',
    '--log-format',
    'json',
  ];
  if (opts.uiPort === null) args.push('--headless');
  else args.push('--ui-port', String(opts.uiPort));
  if (opts.dbFile) {
    fs.mkdirSync(path.dirname(opts.dbFile), { recursive: true });
    args.push('--db-filename', opts.dbFile);
  }
  if (opts.namespace !== 'default') args.push('--namespace', opts.namespace);
  for (const key of Object.values(SA)) args.push('--search-attribute', `${key.name}=${SA_CLI_TYPE[key.type]}`);
  const child: ChildProcess = spawn(opts.cli, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let exited: number | null | undefined;
  // A panic's cause is on its first lines and the goroutine dump after it can run to megabytes: keep both ends.
  let head = '';
  let stderr = '';
  child.on('exit', (code) => {
    exited = code;
  });
  child.stdout?.on('data', (d: Buffer) => log.debug(d.toString().trim()));
  child.stderr?.on('data', (d: Buffer) => {
    if (head.length < 2000) head = (head + d.toString()).slice(0, 2000);
    stderr = (stderr + d.toString()).slice(-2000);
    log.debug(d.toString().trim());
  });
  const deadline = Date.now() + 60_000;
  while (!(await portOpen(opts.port))) {
    if (exited !== undefined) {
      // 'exit' can come before the last of stderr: give the pipes a moment to drain.
      await new Promise((r) => (child.stderr?.closed ? r(null) : setTimeout(r, 500).unref()));
      throw new StartFailed(exited, { head, tail: stderr });
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error('temporal server start-dev did not open its port within 60 s');
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  log.info({ address, ui: uiUrl, serverPid: child.pid }, 'Temporal dev server ready');
  return {
    address,
    uiUrl,
    owned: true,
    pid: child.pid ?? null,
    alive: () => exited === undefined,
    stop: () =>
      new Promise<void>((resolve) => {
        if (exited !== undefined) return resolve();
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        child.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}
