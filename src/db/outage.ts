// A database outage as one process sees it: noticed by the first request or activity that could not reach
// PostgreSQL, watched with a probe until it answers again, and then the work that waited on it is resumed at once:
// activities waiting in the worker (src/temporal/wait-for-database.ts) and whatever registered for the recovery
// (runtime.ts: the checkouts and plan changes whose provider notifications may have been refused meanwhile).
import type { Logger } from '../logger.js';

/** How often the probe asks PostgreSQL whether it answers again, while it is known to be down. */
export const OUTAGE_PROBE_EVERY_MS = 500;

export class DatabaseOutage {
  private since: number | null = null;
  private probing: NodeJS.Timeout | undefined;
  private stopped = false;
  private waiters = new Set<(back: boolean) => void>();
  private readonly recoveryListeners: ((downForMs: number) => Promise<unknown> | void)[] = [];

  constructor(
    private readonly logger: Logger,
    private readonly probe?: () => Promise<unknown>,
    private readonly probeEveryMs = OUTAGE_PROBE_EVERY_MS,
  ) {}

  get down(): boolean {
    return this.since !== null;
  }

  /** How many are waiting for the database to answer again (activities in the worker), for the log and tests. */
  get waiting(): number {
    return this.waiters.size;
  }

  /**
   * Something failed because the database is unreachable: the first failure of an outage logs one line and starts
   * the probe; later ones add nothing.
   */
  failed(err: unknown, fields: Record<string, unknown> = {}): void {
    if (this.since !== null || this.stopped) return;
    this.since = Date.now();
    this.logger.error(
      { err: String((err as Error)?.message ?? err), ...fields },
      'database unreachable: requests answer 503 and workflow activities wait until it is back',
    );
    if (!this.probe) return;
    const probe = this.probe;
    const check = () => {
      probe().then(
        () => this.recovered(),
        () => {
          if (this.since !== null && !this.stopped) this.probing = setTimeout(check, this.probeEveryMs).unref();
        },
      );
    };
    this.probing = setTimeout(check, this.probeEveryMs).unref();
  }

  /**
   * Resolves true as soon as the database answers again (at once when no outage is known), false when `ms` passed
   * first or `signal` aborted.
   */
  waitForRecovery(ms: number, signal?: AbortSignal): Promise<boolean> {
    if (this.since === null) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const done = (back: boolean) => {
        clearTimeout(timer);
        this.waiters.delete(done);
        signal?.removeEventListener('abort', abort);
        resolve(back);
      };
      const abort = () => done(false);
      const timer = setTimeout(() => done(false), ms);
      this.waiters.add(done);
      if (signal?.aborted) abort();
      else signal?.addEventListener('abort', abort, { once: true });
    });
  }

  /** Runs `fn` after each outage this process noticed, once the database answers again; its failures are logged. */
  onRecovered(fn: (downForMs: number) => Promise<unknown> | void): void {
    this.recoveryListeners.push(fn);
  }

  private recovered(): void {
    if (this.since === null) return;
    const downForMs = Date.now() - this.since;
    this.logger.info({ downForMs, waiting: this.waiting }, 'database reachable again');
    this.since = null;
    if (this.probing) clearTimeout(this.probing);
    for (const wake of [...this.waiters]) wake(true);
    for (const fn of this.recoveryListeners)
      void Promise.resolve()
        .then(() => fn(downForMs))
        .catch((err: unknown) => this.logger.warn({ err }, 'work after the database came back failed'));
  }

  stop(): void {
    this.stopped = true;
    if (this.probing) clearTimeout(this.probing);
    for (const wake of [...this.waiters]) wake(false);
  }
}
