import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { IApp } from '../apps/apps.entities.js';
import type { Logger } from '../logger.js';

/**
 * Channels and the lock the credential cache uses. A trigger on `apps` (migration
 * 20261124091000) sends `<app id> <transaction id>` on APPS_CHANNEL for every changed or deleted
 * app row, when the change commits. Each listening process drops that app and answers on ACK_CHANNEL
 * with the same payload. Each listener connection holds a shared advisory lock (LISTENER_LOCK) while it
 * listens, so a writer can tell from `pg_locks` which listeners must answer.
 */
export const APPS_CHANNEL = 'offerkit_apps';
export const ACK_CHANNEL = 'offerkit_apps_ack';
export const LISTENER_LOCK = [727274, 17] as const;
/** The most records kept beside one cached app (its settings, its MCP connections' tokens and state). */
export const MAX_COMPANIONS = 2000;

export interface CredentialCacheOptions {
  databaseUrl: string;
  /** How long an entry may be used without being read again (the safety net); 0 turns the cache off. */
  ttlMs: number;
  /** The most apps kept; the least recently used go first. */
  maxApps: number;
  /** How long a change waits for every listener to drop the old record. */
  confirmMs: number;
  /** How often the listener connection is checked with a query. */
  checkMs?: number;
  /** How long connecting may take (a server that accepts and never answers must not hold the start for ever). */
  connectMs?: number;
  logger: Logger;
}

interface Entry {
  app: IApp;
  expires: number;
  /** Records a domain keeps beside the app (`companion`), dropped with it. */
  companions: Map<string, unknown>;
}

/**
 * The app behind each request's credential, kept in this process so a request is one database round trip
 * (its own statement) instead of two. Kept correct across every API process:
 *
 * - entries are used only while this process's listener connection is up and listening; when it drops,
 *   the cache empties and is bypassed until the connection is back and listening again, and then it
 *   empties once more (a notification sent while it was away is lost, so anything kept is suspect);
 * - a record read from the database is kept only if no notification arrived while it was being read
 *   (`epoch`), so a read that raced a change cannot put the old record back;
 * - the writer of a change waits (`confirm`) until every listening process has answered that it dropped
 *   the app, so when a key regeneration or an app deletion answers, the old key fails in every process;
 * - entries expire after `ttlMs` whatever happens (a bound on any mistake in the above).
 */
export class CredentialCache {
  private readonly entries = new Map<string, Entry>();
  private epoch = 0;
  private client: pg.Client | null = null;
  private listening = false;
  private starting: Promise<void> | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private checkTimer: NodeJS.Timeout | null = null;
  private failures = 0;
  private closed = false;
  /** Answers received per change payload: the backend pids of the listeners that answered, and when. */
  private readonly acks = new Map<string, { pids: Set<number>; at: number }>();
  private readonly ackWaiters = new Set<() => void>();

  constructor(private readonly opts: CredentialCacheOptions) {}

  get enabled(): boolean {
    return this.opts.ttlMs > 0;
  }

  /** Whether entries are being used (the listener is connected and listening). */
  get active(): boolean {
    return this.listening;
  }

  /** The app with this id: from the cache when it may be used, else loaded (and kept when that is safe). */
  async app(id: string, load: () => Promise<IApp | null>): Promise<IApp | null> {
    if (!this.enabled || this.closed) return load();
    if (!this.listening) {
      // Not listening yet (first request) or reconnecting (a retry is scheduled): read through meanwhile.
      if (!this.retryTimer) void this.start().catch(() => undefined);
      return load();
    }
    const now = Date.now();
    const hit = this.entries.get(id);
    if (hit && hit.expires > now) {
      // Most recently used last: the Map's order is the eviction order.
      this.entries.delete(id);
      this.entries.set(id, hit);
      return hit.app;
    }
    const epoch = this.epoch;
    const app = await load();
    if (app && this.listening && epoch === this.epoch) {
      this.entries.delete(id);
      this.entries.set(id, { app: Object.freeze(app), expires: now + this.opts.ttlMs, companions: new Map() });
      while (this.entries.size > this.opts.maxApps) this.entries.delete(this.entries.keys().next().value!);
    }
    return app;
  }

  /**
   * A record kept beside a cached app under `key` (an app's MCP settings, say), under the same rules as the app: used
   * only while the app is cached and this process listens, kept only if no change was announced while it was read,
   * dropped whenever the app is. A writer of such a record announces its change on APPS_CHANNEL as a change to the
   * app (a trigger does it) and waits for `confirm`. Read through (`load`) whenever the app itself is not cached.
   */
  async companion<T>(
    appId: string,
    key: string,
    load: () => Promise<T>,
    /** Whether a loaded value is kept (an unknown access token is not: guesses must not fill the cache). */
    keep: (value: T) => boolean = () => true,
  ): Promise<T> {
    if (!this.enabled || this.closed || !this.listening) return load();
    const entry = this.entries.get(appId);
    if (!entry || entry.expires <= Date.now()) return load();
    if (entry.companions.has(key)) return entry.companions.get(key) as T;
    const epoch = this.epoch;
    const value = await load();
    if (
      keep(value) &&
      this.listening &&
      epoch === this.epoch &&
      this.entries.get(appId) === entry &&
      // A bound on one app's records (its OAuth connections' tokens): past it, they are read through.
      entry.companions.size < MAX_COMPANIONS
    )
      entry.companions.set(key, typeof value === 'object' && value !== null ? Object.freeze(value) : value);
    return value;
  }

  /** Drops one record kept beside an app in this process (a value found stale on use, e.g. an expired token). */
  forget(appId: string, key: string): void {
    this.entries.get(appId)?.companions.delete(key);
  }

  /** Starts listening (once; later calls wait for the same start). Resolves when listening. */
  start(): Promise<void> {
    if (this.listening) return Promise.resolve();
    if (this.closed) return Promise.reject(new Error('credential cache closed'));
    this.starting ??= this.connect().finally(() => (this.starting = null));
    return this.starting;
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.opts.databaseUrl,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      connectionTimeoutMillis: this.opts.connectMs ?? 2000,
      application_name: 'offerkit credential cache',
    });
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, null));
    client.on('notification', (msg) => this.notified(client, msg));
    try {
      await client.connect();
      await client.query(`listen ${APPS_CHANNEL}`);
      await client.query(`listen ${ACK_CHANNEL}`);
      await client.query('select pg_advisory_lock_shared($1, $2)', [...LISTENER_LOCK]);
    } catch (err) {
      client.removeAllListeners('end');
      await client.end().catch(() => undefined);
      this.scheduleRetry();
      throw err;
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.failures = 0;
    // Whatever was kept before may have missed a notification.
    this.flush();
    this.listening = true;
    this.checkTimer = setInterval(() => void this.check(client), this.opts.checkMs ?? 10_000);
    this.checkTimer.unref();
  }

  /** A query on the listener connection; a connection that does not answer is dropped and replaced. */
  private async check(client: pg.Client) {
    const timeout = new Promise<never>((_, reject) => {
      const t = setTimeout(() => reject(new Error('listener connection did not answer')), 5000);
      t.unref();
    });
    try {
      await Promise.race([client.query('select 1'), timeout]);
    } catch (err) {
      this.lost(client, err as Error);
    }
  }

  private lost(client: pg.Client, err: Error | null) {
    if (this.client !== client) return;
    this.client = null;
    this.listening = false;
    this.flush();
    if (this.checkTimer) clearInterval(this.checkTimer);
    this.checkTimer = null;
    client.removeAllListeners('notification');
    // A connection that stopped answering may never emit 'end': close its socket.
    (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
    void client.end().catch(() => undefined);
    if (!this.closed) {
      // 57P01: PostgreSQL ended the session on purpose (it is shutting down, as on a Ctrl-C of `npm start`, which
      // reaches the embedded server too, or an administrator ended it): expected, so not a warning.
      if ((err as { code?: unknown } | null)?.code === '57P01')
        this.opts.logger.info(
          'credential cache: PostgreSQL ended the listener connection; not caching until it is back',
        );
      else this.opts.logger.warn({ err }, 'credential cache: listener connection lost; not caching until it is back');
      this.scheduleRetry();
    }
  }

  private scheduleRetry() {
    if (this.closed || this.retryTimer) return;
    const delay = Math.min(100 * 2 ** this.failures++, 5000);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      void this.start().catch((err: unknown) =>
        this.opts.logger.warn({ err }, 'credential cache: could not listen; retrying'),
      );
    }, delay);
    this.retryTimer.unref();
  }

  private flush() {
    this.entries.clear();
    this.epoch++;
  }

  private notified(client: pg.Client, msg: pg.Notification) {
    const payload = msg.payload ?? '';
    if (msg.channel === APPS_CHANNEL) {
      this.epoch++;
      const appId = payload.split(' ')[0];
      if (appId === '*') this.entries.clear();
      else this.entries.delete(appId);
      client
        .query('select pg_notify($1, $2)', [ACK_CHANNEL, payload])
        .catch((err: unknown) => this.opts.logger.warn({ err }, 'credential cache: could not answer a change'));
    } else if (msg.channel === ACK_CHANNEL) {
      const now = Date.now();
      let entry = this.acks.get(payload);
      if (!entry) {
        entry = { pids: new Set(), at: now };
        this.acks.set(payload, entry);
        // Keep a minute of answers (a writer may look after they arrived).
        for (const [k, v] of this.acks) {
          if (now - v.at < 60_000) break;
          this.acks.delete(k);
        }
      }
      entry.pids.add(msg.processId);
      for (const wake of [...this.ackWaiters]) wake();
    }
  }

  /**
   * Waits until every process listening on this database has dropped the app a committed change touched
   * (`change` is the payload the trigger sent: `<app id> <transaction id>`). A listener that does not
   * answer within `confirmMs` has its connection ended (so its process stops using its cache until it
   * listens again) and a warning is logged. Returns the listeners that answered and those ended.
   */
  async confirm(change: string): Promise<{ answered: number; ended: number[] }> {
    if (!this.enabled) return { answered: 0, ended: [] };
    // The change is committed whatever happens here: a failure to confirm is logged, not answered as an error
    // (this process's own cache is not used while its listener is down).
    // Bounded as a whole: a listener connection to a server that stopped answering is replaced by the periodic
    // check, but the request that made the change does not wait for that.
    const bound = this.opts.confirmMs + (this.opts.connectMs ?? 2000) + 1000;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${bound} ms`)), bound);
    });
    try {
      return await Promise.race([this.awaitAnswers(change), late]);
    } catch (err) {
      this.opts.logger.warn({ err, change }, 'credential cache: could not confirm a change with every process');
      return { answered: 0, ended: [] };
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Announces a committed change to an app's records (`*`: every app's) and waits until every listening process
   * dropped what it kept of it (`confirm`). For a writer whose statement may or may not have fired a trigger (a
   * token deleted, a connection changed, a membership lowered): the announcement is its own notification, sent after
   * the commit, so a process that answers it has also dropped whatever the triggers announced before it (one
   * connection delivers notifications in commit order).
   */
  async announce(appId: string): Promise<{ answered: number; ended: number[] }> {
    if (!this.enabled || this.closed) return { answered: 0, ended: [] };
    const change = `${appId} announced-${randomUUID()}`;
    try {
      await this.start();
      if (!this.client) throw new Error('the listener connection was lost');
      await this.client.query('select pg_notify($1, $2)', [APPS_CHANNEL, change]);
    } catch (err) {
      this.opts.logger.warn({ err, change }, 'credential cache: could not announce a change');
      return { answered: 0, ended: [] };
    }
    return this.confirm(change);
  }

  private async awaitAnswers(change: string): Promise<{ answered: number; ended: number[] }> {
    await this.start();
    const client = this.client!;
    const { rows } = await client.query<{ pid: number }>(
      `select pid from pg_locks where locktype = 'advisory' and granted and classid = $1 and objid = $2 and objsubid = 2
          and database = (select oid from pg_database where datname = current_database())`,
      [...LISTENER_LOCK],
    );
    const waiting = () => rows.map((r) => r.pid).filter((pid) => !this.acks.get(change)?.pids.has(pid));
    const deadline = Date.now() + this.opts.confirmMs;
    while (waiting().length && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        const wake = () => {
          this.ackWaiters.delete(wake);
          clearTimeout(t);
          resolve();
        };
        const t = setTimeout(wake, Math.max(1, deadline - Date.now()));
        this.ackWaiters.add(wake);
      });
    }
    const missing = waiting();
    if (missing.length) {
      this.opts.logger.warn(
        { change, listeners: missing },
        'credential cache: listeners did not confirm a change in time; ending their connections',
      );
      await client.query('select pg_terminate_backend(pid) from unnest($1::int[]) as pid', [missing]);
    }
    return { answered: rows.length - missing.length, ended: missing };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.listening = false;
    this.flush();
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.checkTimer) clearInterval(this.checkTimer);
    await this.starting?.catch(() => undefined);
    const client = this.client;
    this.client = null;
    if (client) {
      client.removeAllListeners('end');
      await client.end().catch(() => undefined);
    }
  }
}
