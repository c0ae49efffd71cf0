import { PassThrough } from 'node:stream';
import pg from 'pg';
import type { ChangeStream } from '../deps.js';
import { AppError } from '../errors.js';
import type { Logger } from '../logger.js';

/**
 * The change stream's process side (GET /apps/:appId/stream). Rows of `access_changes` (written by triggers in the
 * transaction of each change, src/db/migrations/Migration20261224090000_access_changes.ts) are read by one query per
 * wake-up for every app this process has readers of, and handed to each reader past its own position. A position is
 * `(tx, id)`; only rows of finished transactions are read (`tx` below the snapshot's xmin), so no row ever commits
 * behind a position already handed out. Wake-ups: a NOTIFY on `offerkit_access` from the trigger, and a poll (a row
 * held back behind a running transaction sends no second notification).
 */

export const ACCESS_CHANNEL = 'offerkit_access';
export const DIRTY_CHANNEL = 'offerkit_access_dirty';

/** The kinds of event the stream sends. `credits`: a pool's balance moved by anything but a draw (a ledger trigger). */
export type ChangeKind = 'catalog' | 'account' | 'usage' | 'credits';

export interface Change {
  /** The event id: `<tx>-<id>`. */
  eventId: string;
  tx: bigint;
  id: bigint;
  appId: string;
  accountId: string | null;
  kind: ChangeKind;
  data: Record<string, unknown>;
}

interface Position {
  tx: bigint;
  id: bigint;
}

const after = (a: Position, b: Position) => a.tx > b.tx || (a.tx === b.tx && a.id > b.id);
export const eventIdOf = (p: Position) => `${p.tx}-${p.id}`;

/** A `Last-Event-ID` back to a position; null when it is not one of ours. */
export function parseEventId(value: string | undefined): Position | null {
  const m = /^(\d{1,20})-(\d{1,20})$/.exec(value?.trim() ?? '');
  return m ? { tx: BigInt(m[1]), id: BigInt(m[2]) } : null;
}

export interface StreamSettings {
  databaseUrl: string;
  /** Opens a connection with the service's bounds (statement timeout and so on). */
  query: <T>(text: string, params?: unknown[]) => Promise<T[]>;
  logger: Logger;
  retentionHours: number;
  maxBufferBytes: number;
  heartbeatMs: number;
  usageFlushMs: number;
  /** Poll when no notification came (a row held back behind another transaction). */
  pollMs?: number;
  connectMs?: number;
}

interface Reader {
  appId: string;
  /** An account token's reader: its own account's events (and the catalog's). */
  accountId: string | null;
  position: Position;
  out: PassThrough;
  /** Events that arrived while the backlog was read; null once live. */
  queue: Change[] | null;
  heartbeat: NodeJS.Timeout;
}

const READ_LIMIT = 500;
// Selected as text under other names: `order by tx, id` must sort the columns, not their text.
const SELECT = `select tx::text as t, id::text as i, app_id, account_id, kind, data from access_changes`;
const SAFE = `tx < pg_snapshot_xmin(pg_current_snapshot())`;

interface Row {
  t: string;
  i: string;
  app_id: string;
  account_id: string | null;
  kind: ChangeKind;
  data: Record<string, unknown>;
}

const toChange = (r: Row): Change => ({
  eventId: `${r.t}-${r.i}`,
  tx: BigInt(r.t),
  id: BigInt(r.i),
  appId: r.app_id,
  accountId: r.account_id,
  kind: r.kind,
  data: r.data,
});

export class AccessStream implements ChangeStream {
  private readonly readers = new Set<Reader>();
  private client: pg.Client | null = null;
  private starting: Promise<void> | null = null;
  private closed = false;
  private cursor: Position | null = null;
  private reading = false;
  private readAgain = false;
  private flushing = false;
  private flushAgain = false;
  private flushTimer: NodeJS.Timeout | null = null;
  private timers: NodeJS.Timeout[] = [];
  private failures = 0;
  /** Counted for tests and /health-like diagnostics. */
  readonly stats = { dropped: 0, delivered: 0 };

  constructor(private readonly s: StreamSettings) {}

  /** Listens and starts the usage flusher and the pruning (once; later calls wait for the same start). */
  start(): Promise<void> {
    if (this.client) return Promise.resolve();
    if (this.closed) return Promise.reject(new Error('stream closed'));
    this.starting ??= this.connect().finally(() => (this.starting = null));
    return this.starting;
  }

  private async connect() {
    const client = new pg.Client({
      connectionString: this.s.databaseUrl,
      keepAlive: true,
      connectionTimeoutMillis: this.s.connectMs ?? 2000,
      application_name: 'offerkit change stream',
    });
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, null));
    client.on('notification', (msg) => {
      if (msg.channel === ACCESS_CHANNEL) this.wake();
      else if (msg.channel === DIRTY_CHANNEL) this.scheduleFlush(0);
    });
    try {
      await client.connect();
      await client.query(`listen ${ACCESS_CHANNEL}`);
      await client.query(`listen ${DIRTY_CHANNEL}`);
    } catch (err) {
      client.removeAllListeners('end');
      await client.end().catch(() => undefined);
      this.retry();
      throw err;
    }
    if (this.closed) return void (await client.end().catch(() => undefined));
    this.client = client;
    this.failures = 0;
    if (this.timers.length === 0) {
      const every = (ms: number, f: () => void) => this.timers.push(setInterval(f, ms).unref());
      every(this.s.pollMs ?? 1000, () => this.wake());
      every(Math.max(this.s.usageFlushMs * 8, 2000), () => this.scheduleFlush(0));
      every(60_000, () => void this.prune());
      void this.prune();
    }
    // Whatever was notified while not listening.
    this.wake();
    this.scheduleFlush(0);
  }

  private lost(client: pg.Client, err: Error | null) {
    if (this.client !== client) return;
    this.client = null;
    client.removeAllListeners('notification');
    void client.end().catch(() => undefined);
    if (this.closed) return;
    this.s.logger.warn({ err }, 'change stream: listener connection lost; polling until it is back');
    this.retry();
  }

  private retry() {
    if (this.closed) return;
    const delay = Math.min(100 * 2 ** this.failures++, 5000);
    setTimeout(() => void this.start().catch(() => undefined), delay).unref();
  }

  /** The newest position every reader may already have: the last row of a finished transaction. */
  async head(): Promise<Position> {
    const rows = await this.s.query<{ t: string; i: string }>(
      `select tx::text as t, id::text as i from access_changes where ${SAFE} order by tx desc, id desc limit 1`,
    );
    const horizon = await this.horizon();
    const last = rows[0] ? { tx: BigInt(rows[0].t), id: BigInt(rows[0].i) } : horizon;
    return after(horizon, last) ? horizon : last;
  }

  private async horizon(): Promise<Position> {
    const [h] = await this.s.query<{ tx: string; id: string }>(
      'select tx::text as tx, id::text as id from access_horizon',
    );
    return { tx: BigInt(h?.tx ?? 0), id: BigInt(h?.id ?? 0) };
  }

  /**
   * A new reader of an app's changes from `from` (the `Last-Event-ID`; null: from now). Returns the stream to send;
   * a position older than the retention (or not one of ours) gets a `resync` event first.
   */
  async open(appId: string, accountId: string | null, from: string | undefined): Promise<PassThrough> {
    // A stopping process takes no new readers (a kept-alive connection may still bring one): they go elsewhere.
    if (this.closed)
      throw new AppError(503, 'This API process is stopping; reconnect', undefined, { 'Retry-After': '1' });
    await this.start().catch((err: unknown) => this.s.logger.warn({ err }, 'change stream: not listening'));
    const head = await this.head();
    const asked = from === undefined ? null : parseEventId(from);
    const horizon = await this.horizon();
    const resync = from !== undefined && (!asked || after(horizon, asked) || after(asked, head));
    const out = new PassThrough();
    const reader: Reader = {
      appId,
      accountId,
      position: asked && !resync ? asked : head,
      out,
      queue: [],
      heartbeat: setInterval(() => this.write(reader, ': keep-alive\n\n'), this.s.heartbeatMs).unref(),
    };
    // The process's own position starts at the first reader's (each reader catches up on its own first).
    if (this.readers.size === 0 || !this.cursor) this.cursor = head;
    this.readers.add(reader);
    out.on('close', () => this.remove(reader));
    // The reconnection delay a browser's EventSource uses, and the position a client starts from.
    this.write(reader, `retry: 1000\n\n`);
    if (resync) {
      const why = asked ? 'the position is older than the retention' : 'the Last-Event-ID is not a position';
      this.write(reader, frame(eventIdOf(head), 'resync', { reason: why }));
    } else this.write(reader, frame(eventIdOf(reader.position), 'ready', {}));
    void this.backlog(reader).catch((err: unknown) => {
      this.s.logger.warn({ err, appId }, 'change stream: could not read what a reader missed; dropping it');
      out.destroy();
    });
    return out;
  }

  /** What the reader missed, page by page, then what arrived meanwhile. */
  private async backlog(reader: Reader) {
    for (;;) {
      if (reader.out.destroyed) return;
      const rows = await this.s.query<Row>(
        `${SELECT} where app_id = $1 and (tx, id) > ($2::xid8, $3::bigint) and ${SAFE}
         ${reader.accountId === null ? '' : `and (account_id = $5 or account_id is null)`}
         order by tx, id limit $4`,
        [
          reader.appId,
          reader.position.tx.toString(),
          reader.position.id.toString(),
          READ_LIMIT,
          ...(reader.accountId === null ? [] : [reader.accountId]),
        ],
      );
      for (const r of rows) this.deliver(reader, toChange(r));
      if (rows.length < READ_LIMIT) break;
      await this.drained(reader);
    }
    const queued = reader.queue ?? [];
    reader.queue = null;
    for (const c of queued) this.deliver(reader, c);
  }

  /** Waits until a reader's buffer is read (bounded: a reader that does not read is dropped). */
  private drained(reader: Reader): Promise<void> {
    if (unread(reader) < 64 * 1024) return Promise.resolve();
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        clearInterval(check);
        this.drop(reader, 'did not read its backlog');
        resolve();
      }, 10_000);
      const check = setInterval(() => {
        if (unread(reader) >= 64 * 1024 && !reader.out.destroyed) return;
        clearInterval(check);
        clearTimeout(t);
        resolve();
      }, 50);
      t.unref();
    });
  }

  private deliver(reader: Reader, c: Change) {
    if (!after(c, reader.position)) return;
    if (reader.accountId !== null && c.accountId !== null && c.accountId !== reader.accountId) return;
    reader.position = c;
    const data: Record<string, unknown> = { ...c.data };
    if (c.accountId !== null) data.accountId = c.accountId;
    this.write(reader, frame(c.eventId, c.kind, data));
    this.stats.delivered++;
  }

  private write(reader: Reader, text: string) {
    if (reader.out.destroyed) return;
    reader.out.write(text);
    // A slow reader is dropped, not buffered for: it reconnects with its Last-Event-ID and catches up.
    if (unread(reader) > this.s.maxBufferBytes) this.drop(reader, 'reads too slowly');
  }

  private drop(reader: Reader, why: string) {
    this.stats.dropped++;
    this.s.logger.info({ appId: reader.appId, why }, 'change stream: dropping a reader');
    reader.out.destroy();
    this.remove(reader);
  }

  private remove(reader: Reader) {
    clearInterval(reader.heartbeat);
    this.readers.delete(reader);
  }

  /** Reads new rows for every app with readers (one query at a time; a wake-up meanwhile reads again after). */
  private wake() {
    if (this.readers.size === 0 || this.closed) return;
    if (this.reading) {
      this.readAgain = true;
      return;
    }
    this.reading = true;
    void this.read()
      .catch((err: unknown) => this.s.logger.warn({ err }, 'change stream: read failed'))
      .finally(() => {
        this.reading = false;
        if (this.readAgain) {
          this.readAgain = false;
          this.wake();
        }
      });
  }

  private async read() {
    if (!this.cursor) return;
    const apps = [...new Set([...this.readers].map((r) => r.appId))];
    if (!apps.length) return;
    const rows = await this.s.query<Row>(
      `${SELECT} where (tx, id) > ($1::xid8, $2::bigint) and ${SAFE} and app_id = any($3) order by tx, id limit $4`,
      [this.cursor.tx.toString(), this.cursor.id.toString(), apps, READ_LIMIT],
    );
    for (const r of rows) {
      const c = toChange(r);
      this.cursor = c;
      for (const reader of this.readers) {
        if (reader.appId !== c.appId) continue;
        if (reader.queue) reader.queue.push(c);
        else this.deliver(reader, c);
      }
    }
    if (rows.length === READ_LIMIT) this.readAgain = true;
  }

  private scheduleFlush(delay: number) {
    if (this.flushing) this.flushAgain = true;
    if (this.closed || this.flushTimer || this.flushing) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = null;
      void this.flush();
    }, delay).unref();
  }

  /**
   * Usage counters marked since the last flush become `usage` events with their values now, at most once per
   * STREAM_USAGE_FLUSH_MS across every process (the clock row): a counter changed a thousand times a second is a few
   * events. A mark is removed in the transaction that writes its event, so a crash loses none, and the event carries
   * the value of the last change that found the mark (it waits for that change to commit).
   */
  private async flush() {
    this.flushing = true;
    this.flushAgain = false;
    let again = false;
    try {
      // One transaction, two statements (src/db/migrations/Migration20261230090000_access_flush_fresh.ts): the marks
      // are deleted first, waiting for a change that holds one, and the counters read on a new snapshot after.
      const [r] = await this.s.query<{ clock: boolean; flushed: number }>(
        `select clock, flushed from access_usage_flush($1::float8)`,
        [this.s.usageFlushMs],
      );
      // Another process flushed a moment ago: marks left now go at the next slot.
      again = !r?.clock;
    } catch (err) {
      this.s.logger.warn({ err }, 'change stream: usage flush failed');
    } finally {
      this.flushing = false;
    }
    if (again || this.flushAgain) this.scheduleFlush(this.s.usageFlushMs);
  }

  /** Rows older than the retention go; the last of them is the horizon a resuming reader must not be behind. */
  /** Public for operations and tests; runs every minute. */
  async prune() {
    try {
      await this.s.query(
        `with d as (delete from access_changes where ctid in (select ctid from access_changes
            where created_at < now() - make_interval(secs => $1::float8 * 3600) limit 10000) returning tx, id),
          top as (select tx, id from d order by tx desc, id desc limit 1)
         update access_horizon h set tx = top.tx, id = top.id from top where (top.tx, top.id) > (h.tx, h.id)`,
        [this.s.retentionHours],
      );
    } catch (err) {
      this.s.logger.warn({ err }, 'change stream: pruning failed');
    }
  }

  /** Readers open now (for tests and diagnostics). */
  get readerCount() {
    return this.readers.size;
  }

  /** Ends every reader (they reconnect elsewhere with their Last-Event-ID) and stops listening. */
  async close() {
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
    if (this.flushTimer) clearTimeout(this.flushTimer);
    for (const reader of [...this.readers]) {
      reader.out.end();
      this.remove(reader);
    }
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }
}

/** Bytes written to a reader and not yet taken by its connection (both sides of the pass-through). */
const unread = (r: Reader) => r.out.writableLength + r.out.readableLength;

/** One server-sent event. */
export function frame(id: string, event: string, data: unknown) {
  return `id: ${id}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}
