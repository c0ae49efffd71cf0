import { APIConnectionError, APIError, NotFoundError, OfferkitError } from './errors.js';
import type { Access } from './generated/api.js';
import { streamChanges, type ChangeEvent } from './stream.js';

/** What the evaluator needs of a secret-key client (`SecretClient` has it). */
export interface LocalSource {
  readonly appId: string;
  readonly baseUrl: string;
  access: { getPrivate(accountId: string): PromiseLike<Access> };
  usage: {
    addAmount(
      accountId: string,
      entitlementId: string,
      body: { amount: number },
      options?: { idempotencyKey?: string; maxRetries?: number },
    ): PromiseLike<{ entitlement: string; count: number }>;
  };
}

export interface LocalOptions {
  /**
   * For an account never seen (not loaded yet, or the API unreachable when it was asked about): allow (`true`,
   * fail-open) or refuse (`false`, fail-closed). One answer for every entitlement, or one per entitlement id
   * (`{ api_calls: true }`; those not named: `default`, else closed). Default: closed.
   */
  unknown?: boolean | { [entitlementId: string]: boolean | undefined; default?: boolean };
  /** Usage adds kept while the API is unreachable (default 10,000); `track` past it throws. */
  maxBuffer?: number;
  /** Node only: a file the buffer is kept in, so a restart sends what was not sent yet. */
  bufferFile?: string;
  /** Milliseconds without a byte from the stream (keep-alives come every 15 s) before reconnecting (default 45,000). */
  heartbeatTimeout?: number;
  /** A usage add the API refused (400, 402, 404): it is dropped (it can never be counted) and reported here. */
  onDropped?: (item: BufferedUsage, error: APIError) => void;
  fetch?: typeof fetch;
}

/** A usage add waiting to be sent: its idempotency key makes resending it count once. */
export interface BufferedUsage {
  key: string;
  accountId: string;
  entitlementId: string;
  amount: number;
}

type Entry = Access['entitlements'][number];

/** Whether the account's pool covers one unit of a feature that draws from it (as the API's `can` says). */
function covered(access: Access, credits: NonNullable<Entry['credits']>): boolean {
  const pool = access.credits.find((p) => p.id === credits.pool);
  return !!pool && (pool.unlimited || (!pool.per_entity && pool.balance >= credits.cost));
}

interface Known {
  access: Access;
  /** Per entitlement: reserved amounts (from `usage` events; estimated from `left` until the first). */
  held: Map<string, number>;
  /** This process's last acknowledged add per entitlement: a `usage` event flushed before it may arrive after. */
  acked: Map<string, { count: number; at: number }>;
  loading: Promise<void> | null;
  /** A change arrived while loading: load again after. */
  again: boolean;
  timer: ReturnType<typeof setTimeout> | null;
}

/** The few file calls a persisted buffer needs (Node's `fs/promises`, loaded only when `bufferFile` is given). */
interface Files {
  writeFile(path: string, data: string): Promise<void>;
  readFile(path: string, encoding: 'utf8'): Promise<string>;
  rename(from: string, to: string): Promise<void>;
}
const NODE_FS = 'node:fs/promises';
const files = () => import(NODE_FS) as Promise<Files>;

/** How long an acknowledged count outranks a lower `usage` event (several usage flushes, 250 ms each). */
const ACK_WINDOW_MS = 1500;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const randomKey = () =>
  globalThis.crypto?.randomUUID?.() ?? `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;

/**
 * Access checks from memory (docs/sdk.md, "Local evaluation"): the accounts asked about are loaded once (their
 * effective access with private meta), then kept fresh by the change stream; `can` answers without a request.
 * `track` sends usage with an idempotency key, in order, buffering while the API is unreachable.
 */
export class LocalEvaluator {
  private readonly accounts = new Map<string, Known | null>();
  private readonly buffer: BufferedUsage[] = [];
  private readonly abort = new AbortController();
  private lastEventId: string | null = null;
  private lastByte = 0;
  private connected = false;
  private closed = false;
  private sending: Promise<void> | null = null;
  private persisting: Promise<void> = Promise.resolve();
  private readonly restored: Promise<void>;
  private readyWaiters: (() => void)[] = [];
  /** Counters for the bench and tests: events applied, reconnections, resyncs. */
  readonly stats = { events: 0, reconnects: 0, resyncs: 0, loads: 0 };
  /** Called after each applied change (for tests and the bench: when a change became visible here). */
  onChange: ((e: ChangeEvent) => void) | null = null;

  constructor(
    private readonly source: LocalSource,
    private readonly credential: string,
    private readonly o: LocalOptions = {},
  ) {
    this.restored = this.restore();
    void this.run();
  }

  /** Resolves once the stream is connected (at most `ms`, default 10 s; then rejects). */
  ready(ms = 10_000): Promise<void> {
    if (this.connected) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new OfferkitError('the change stream did not connect')), ms);
      this.readyWaiters.push(() => {
        clearTimeout(t);
        resolve();
      });
    });
  }

  /** Milliseconds since the stream last proved it is connected (0 while it is). */
  staleness(): number {
    return this.connected ? 0 : Date.now() - this.lastByte;
  }

  /** Usage adds not yet acknowledged by the API. */
  get pending(): number {
    return this.buffer.length;
  }

  /** Loads an account (or reads it again) and resolves with its effective access; null when it does not exist. */
  async load(accountId: string): Promise<Access | null> {
    let k = this.accounts.get(accountId);
    if (k === undefined) {
      k = {
        access: null as unknown as Access,
        held: new Map(),
        acked: new Map(),
        loading: null,
        again: false,
        timer: null,
      };
      this.accounts.set(accountId, k);
      await this.fetch(accountId, k);
    } else if (k?.loading) await k.loading;
    return this.access(accountId);
  }

  /** The account's effective access from memory (as `access.getPrivate` answers), null when unknown or missing. */
  access(accountId: string): Access | null {
    const k = this.accounts.get(accountId);
    if (!k?.access) return null;
    return { ...k.access, entitlements: k.access.entitlements.map((e) => this.entry(accountId, k, e)) };
  }

  /**
   * Whether the account may use the entitlement now, from memory. An account never seen is answered by the
   * `unknown` policy (and loaded in the background for the next call); one that does not exist: false.
   */
  can(accountId: string, entitlementId: string): boolean {
    const k = this.accounts.get(accountId);
    if (k === null) return false;
    if (!k?.access) {
      if (k === undefined) void this.load(accountId).catch(() => this.accounts.delete(accountId));
      return this.unknownPolicy(entitlementId);
    }
    const e = k.access.entitlements.find((x) => x.id === entitlementId);
    return e ? this.entry(accountId, k, e).can : false;
  }

  private unknownPolicy(entitlementId: string): boolean {
    const u = this.o.unknown;
    if (typeof u === 'boolean') return u;
    return u?.[entitlementId] ?? u?.default ?? false;
  }

  /** An entry with this process's unacknowledged adds counted in (as the API will once they arrive). */
  private entry(accountId: string, k: Known, e: Entry): Entry {
    if (e.type !== 'usage') return e;
    let usage = e.usage;
    for (const b of this.buffer) if (b.accountId === accountId && b.entitlementId === e.id) usage += b.amount;
    usage = Math.max(0, usage);
    const taken = usage + (k.held.get(e.id) ?? 0);
    return {
      ...e,
      usage,
      left: e.max === null ? null : Math.max(0, e.max - taken),
      // A feature that draws from a credits pool also needs the pool to cover one unit (the API's `can` says so).
      can: (e.max === null || taken < e.max) && (!e.credits || covered(k.access!, e.credits)),
    };
  }

  /**
   * Adds usage: sent at once with an idempotency key; while the API is unreachable kept (in order, bounded, in
   * `bufferFile` when given) and sent when it is back, each counted once. Resolves when it is queued.
   */
  async track(accountId: string, entitlementId: string, amount = 1): Promise<void> {
    await this.restored;
    if (this.buffer.length >= (this.o.maxBuffer ?? 10_000))
      throw new OfferkitError('the usage buffer is full (the API has been unreachable for long)');
    this.buffer.push({ key: `local-${randomKey()}`, accountId, entitlementId, amount });
    await this.persist();
    this.send();
  }

  /** Resolves when every buffered add is acknowledged (or `ms` passes: then rejects). */
  async flush(ms = 30_000): Promise<void> {
    const end = Date.now() + ms;
    await this.restored;
    while (this.buffer.length) {
      if (Date.now() > end) throw new OfferkitError(`${this.buffer.length} usage adds not sent yet`);
      this.send();
      await sleep(20);
    }
  }

  /** Stops the stream and the sending (the buffer stays in `bufferFile`, when given). */
  async close(): Promise<void> {
    this.closed = true;
    this.abort.abort();
    for (const k of this.accounts.values()) if (k?.timer) clearTimeout(k.timer);
    await this.sending?.catch(() => undefined);
  }

  private send() {
    if (this.sending || this.closed) return;
    // A failure here (the buffer file not writable) stops this round; the next `track` or `flush` starts another.
    this.sending = this.sendAll()
      .catch(() => undefined)
      .finally(() => (this.sending = null));
  }

  private async sendAll() {
    let delay = 100;
    while (this.buffer.length && !this.closed) {
      const item = this.buffer[0];
      try {
        const r = await this.source.usage.addAmount(
          item.accountId,
          item.entitlementId,
          { amount: item.amount },
          { idempotencyKey: item.key, maxRetries: 0 },
        );
        this.buffer.shift();
        const k = this.accounts.get(item.accountId);
        const e = k?.access?.entitlements.find((x) => x.id === item.entitlementId);
        if (e) e.usage = r.count;
        k?.acked.set(item.entitlementId, { count: r.count, at: Date.now() });
        await this.persist();
        delay = 100;
      } catch (err) {
        const retry =
          err instanceof APIConnectionError ||
          (err instanceof APIError && (err.status >= 500 || err.status === 429 || err.status === 408));
        if (!retry && err instanceof APIError) {
          this.buffer.shift();
          await this.persist();
          this.o.onDropped?.(item, err);
          continue;
        }
        if (!retry) throw err;
        await sleep(delay);
        delay = Math.min(delay * 2, 2000);
      }
    }
  }

  /**
   * Writes the buffer to `bufferFile`: one write at a time, each of the buffer as it is when the write starts, so the
   * file only moves forward (a `track` and an acknowledgement writing at once would share the temporary file: one
   * rename then fails, and a slower write could put back an older buffer).
   */
  private persist(): Promise<void> {
    if (!this.o.bufferFile) return Promise.resolve();
    const next = this.persisting.then(() => this.write(this.o.bufferFile!));
    this.persisting = next.catch(() => undefined);
    return next;
  }

  private async write(file: string) {
    const fs = await files();
    const tmp = `${file}.tmp`;
    await fs.writeFile(tmp, this.buffer.map((b) => JSON.stringify(b)).join('\n'));
    await fs.rename(tmp, file);
  }

  private async restore() {
    if (!this.o.bufferFile) return;
    const fs = await files();
    const text = await fs.readFile(this.o.bufferFile, 'utf8').catch(() => '');
    for (const line of text.split('\n')) if (line.trim()) this.buffer.push(JSON.parse(line) as BufferedUsage);
    if (this.buffer.length) this.send();
  }

  /** Reads an account's effective access; a change announced meanwhile reads it again. */
  private fetch(accountId: string, k: Known): Promise<void> {
    if (k.loading) {
      k.again = true;
      return k.loading;
    }
    k.loading = (async () => {
      do {
        k.again = false;
        this.stats.loads++;
        try {
          const a = await this.source.access.getPrivate(accountId);
          k.access = a;
          k.held = new Map(
            a.entitlements
              .filter((e) => e.max !== null && e.left !== null && e.left > 0)
              .map((e) => [e.id, Math.max(0, e.max! - e.usage - e.left!)]),
          );
          this.schedule(accountId, k, a.changes_at);
        } catch (err) {
          if (err instanceof NotFoundError) {
            this.accounts.set(accountId, null);
            return;
          }
          // Unreachable: keep what is known (or nothing: the unknown policy answers).
          if (!k.access) this.accounts.delete(accountId);
          throw err;
        }
      } while (k.again);
    })().finally(() => (k.loading = null));
    return k.loading;
  }

  /** Reads the account again when its answer changes by time alone (an incentive ending). */
  private schedule(accountId: string, k: Known, at: string | null) {
    if (k.timer) clearTimeout(k.timer);
    k.timer = null;
    if (!at) return;
    const ms = Math.min(Math.max(0, Date.parse(at) - Date.now()) + 50, 2 ** 31 - 1);
    k.timer = setTimeout(() => void this.reload(accountId), ms);
    (k.timer as { unref?: () => void }).unref?.();
  }

  private async reload(accountId: string) {
    const k = this.accounts.get(accountId);
    if (k) await this.fetch(accountId, k).catch(() => undefined);
    else if (k === null) {
      this.accounts.delete(accountId);
      await this.load(accountId).catch(() => undefined);
    }
  }

  private async reloadAll() {
    const ids = [...this.accounts.keys()];
    for (let i = 0; i < ids.length; i += 8) await Promise.all(ids.slice(i, i + 8).map((id) => this.reload(id)));
  }

  private apply(e: ChangeEvent) {
    if (e.type === 'keep-alive') return;
    if (e.id) this.lastEventId = e.id;
    if (e.type === 'ready') return;
    this.stats.events++;
    if (e.type === 'catalog') void this.reloadAll();
    else if (e.type === 'resync') {
      this.stats.resyncs++;
      void this.reloadAll();
    } else if (e.type === 'account') {
      if (this.accounts.has(e.data.accountId)) void this.reload(e.data.accountId);
    } else if (e.type === 'usage') {
      const k = this.accounts.get(e.data.accountId);
      if (k?.loading) k.again = true;
      const entry = k?.access?.entitlements.find((x) => x.id === e.data.entitlementId);
      if (k && entry) {
        // An event read before this process's own add was acknowledged carries a lower count: within the flush
        // window the acknowledged count stands (a later event carries the counter after that add).
        const acked = k.acked.get(entry.id);
        const fresh = acked && Date.now() - acked.at < ACK_WINDOW_MS ? acked.count : -Infinity;
        entry.usage = Math.max(e.data.usage, fresh);
        k.held.set(entry.id, e.data.held);
        // A draw moved the pool's balance, which every feature drawing from it reads: read the account again.
        if (entry.credits) void this.reload(e.data.accountId);
      } else if (k) void this.reload(e.data.accountId);
    } else if (e.type === 'credits') {
      // A balance moved (issue 42): the account is read again, so its pools, and what draws from them, stay right.
      if (this.accounts.has(e.data.accountId)) void this.reload(e.data.accountId);
    }
    this.onChange?.(e);
  }

  /** The stream, reconnected with the last id after any failure (backoff to 5 s), until `close`. */
  private async run() {
    let delay = 100;
    while (!this.closed) {
      const idle = new AbortController();
      const stop = () => idle.abort();
      this.abort.signal.addEventListener('abort', stop);
      let watchdog: ReturnType<typeof setInterval> | null = null;
      try {
        const events = streamChanges({
          baseUrl: this.source.baseUrl,
          appId: this.source.appId,
          credential: this.credential,
          lastEventId: this.lastEventId,
          signal: idle.signal,
          ...(this.o.fetch ? { fetch: this.o.fetch } : {}),
        });
        this.lastByte = Date.now();
        watchdog = setInterval(() => {
          if (Date.now() - this.lastByte > (this.o.heartbeatTimeout ?? 45_000)) idle.abort();
        }, 1000);
        for await (const e of events) {
          this.lastByte = Date.now();
          if (!this.connected) {
            this.connected = true;
            delay = 100;
            for (const w of this.readyWaiters.splice(0)) w();
          }
          this.apply(e);
        }
      } catch {
        // reconnect below
      } finally {
        if (watchdog) clearInterval(watchdog);
        this.abort.signal.removeEventListener('abort', stop);
        if (this.connected) this.lastByte = Date.now();
        this.connected = false;
      }
      if (this.closed) return;
      this.stats.reconnects++;
      await sleep(delay);
      delay = Math.min(delay * 2, 5000);
    }
  }
}
