// The outbox's relay: carries out the commands services wrote (src/temporal/outbox.ts) against Temporal, after
// the commit, and again for any a crash or an outage left behind.
import { randomUUID } from 'node:crypto';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import type { Orm } from '../db/orm.js';
import type { Logger } from '../logger.js';
import { boundedCall, temporalReachable, type TemporalHandle } from './client.js';
import {
  checkStoredCommand,
  toSearchAttributePairs,
  UnknownWorkflowCommandError,
  type StoredCommand,
  type TemporalCommand,
} from './outbox.js';

interface Row {
  id: string;
  kind: string;
  workflow_id: string;
  payload: StoredCommand;
  attempts: number;
}

/** gRPC codes that mean "Temporal is not there right now" rather than "this command is wrong". */
const UNAVAILABLE_CODES = new Set([4 /* DEADLINE_EXCEEDED */, 14 /* UNAVAILABLE */]);

/** True when the error says the Temporal frontend could not be reached (or did not answer in time). */
export function isTemporalUnavailable(err: unknown): boolean {
  for (let e = err as { code?: unknown; cause?: unknown; message?: unknown } | undefined, i = 0; e && i < 5; i++) {
    if (typeof e.code === 'number' && UNAVAILABLE_CODES.has(e.code)) return true;
    if (typeof e.message === 'string' && /UNAVAILABLE|DEADLINE_EXCEEDED|Deadline exceeded/.test(e.message)) return true;
    e = e.cause as typeof e;
  }
  return false;
}

/** How long a claim lasts unless its dispatcher renews it (`leaseMs`), and how long one Temporal call may take. */
export const OUTBOX_LEASE_MS = 10_000;
export const OUTBOX_CALL_TIMEOUT_MS = 5_000;
/**
 * A call starts only while the claim has its timeout plus a tenth of the lease (1 s) left. Renewed every quarter of
 * the lease, a claim keeps three quarters of it at least, so a dispatcher that renews never runs short; the call's
 * timeout must stay below that (5 s + 1 s against 7.5 s by default).
 */
const spareMs = (leaseMs: number) => leaseMs / 10;

/**
 * Executes outbox commands against Temporal. Right after a commit the service calls
 * `dispatchSoon(ids)`, which runs them in the background: the request has already answered and no
 * database connection is held while Temporal is called (rows are claimed with a short lease in one
 * statement, then deleted in another). The relay loop (run by the worker) retries whatever is still
 * there, so a crash between commit and start loses nothing; workflow-id rules make a repeated command
 * harmless. While Temporal is unreachable nothing waits on it: commands stay in the outbox, the relay
 * probes the frontend on every tick, and drains the backlog in parallel as soon as it answers.
 *
 * A claim is a lease of `leaseMs` (10 s) that its dispatcher renews every quarter of it while it works through the
 * claimed rows, so the claims of a process that died (kill -9, a host lost) are free again within 10 s, instead of
 * the minute a fixed lease long enough for a whole batch took. A command is never started by two dispatchers at
 * once: a call starts only while the claim has its timeout plus a second left, counted from when the last renewal
 * was sent, and a call is abandoned at its timeout; so every call of a claim has ended before the claim can expire
 * and another dispatcher take the row. A dispatcher that cannot renew (the database is gone) starts nothing more.
 */
export class OutboxRelay {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private stopped = false;
  private readonly sweeps: { name: string; run: () => Promise<unknown> }[] = [];
  private readonly inflight = new Set<Promise<unknown>>();
  /** Since when Temporal is known to be unreachable (null: it answered last time). */
  private downSince: number | null = null;
  private lastProbe = 0;
  /** Commands carried out since start (for operators and the chaos script). */
  readonly stats = { executed: 0, failed: 0, deferred: 0 };

  /** Work the relay also does on every tick (e.g. finishing event fan-outs a crash left behind). */
  addSweep(name: string, run: () => Promise<unknown>): void {
    this.sweeps.push({ name, run });
  }

  constructor(
    private readonly orm: Orm,
    private readonly temporal: TemporalHandle,
    private readonly logger: Logger,
    private readonly pollMs = 2000,
    private readonly opts: { callTimeoutMs?: number; leaseMs?: number; concurrency?: number; batch?: number } = {},
  ) {
    const leaseMs = opts.leaseMs ?? OUTBOX_LEASE_MS;
    if ((opts.callTimeoutMs ?? OUTBOX_CALL_TIMEOUT_MS) + spareMs(leaseMs) > (leaseMs * 3) / 4)
      throw new Error('outbox: a call timeout plus a tenth of the lease must fit in three quarters of the lease');
  }

  /** Whether Temporal answered the last command or probe. */
  get temporalDown(): boolean {
    return this.downSince !== null;
  }

  /**
   * Runs the given entries in the background, after the caller has answered. Never throws; a command
   * that cannot run now stays in the outbox for the relay.
   */
  dispatchSoon(ids: number[]): void {
    if (ids.length === 0 || this.stopped) return;
    const p = (async () => {
      if (!(await this.temporalUp())) return;
      while ((await this.dispatch(ids)) > 0 && !this.stopped) {
        /* a later command of the same workflow becomes the oldest once the earlier one ran */
      }
    })()
      .catch((err) => this.logger.warn({ err }, 'outbox dispatch failed; the relay will retry'))
      .finally(() => this.inflight.delete(p));
    this.inflight.add(p);
  }

  /**
   * Resolves when the background dispatches started so far, and the relay's pass under way, have
   * finished (tests, shutdown): a background dispatch skips rows the relay has claimed, so those are
   * carried out by the relay's pass.
   */
  async idle(): Promise<void> {
    do {
      await Promise.allSettled([...this.inflight]);
      await this.running;
    } while (this.inflight.size > 0);
  }

  /** False while Temporal is known to be down, re-probing it at most once a second. */
  private async temporalUp(): Promise<boolean> {
    if (this.downSince === null) return true;
    if (Date.now() - this.lastProbe < 1000) return false;
    this.lastProbe = Date.now();
    if (!(await temporalReachable(this.temporal.connection, 1000))) return false;
    const pending = await this.orm.em
      .fork()
      .getConnection()
      .execute<{ n: string }[]>('select count(*) as n from outbox')
      .then((r) => Number(r[0].n))
      .catch(() => null);
    this.logger.info(
      { downForMs: Date.now() - this.downSince, pending },
      'Temporal is reachable again; draining the outbox',
    );
    this.downSince = null;
    return true;
  }

  private markDown(err: unknown): void {
    if (this.downSince !== null) return;
    this.downSince = Date.now();
    this.lastProbe = Date.now();
    this.logger.warn(
      { err: String((err as Error)?.message ?? err) },
      'Temporal is unreachable; workflow commands wait in the outbox until it answers',
    );
  }

  /**
   * Claims due entries (the given ids, or every due entry), the oldest of each workflow only so a
   * workflow's commands run in order, with a lease so no other dispatcher takes them meanwhile; runs
   * them in parallel without holding a database connection; deletes the ones Temporal accepted.
   * Returns how many were claimed (0 once Temporal turned out to be down). Never throws.
   */
  async dispatch(ids?: number[]): Promise<number> {
    if (ids && ids.length === 0) return 0;
    const leaseMs = this.opts.leaseMs ?? OUTBOX_LEASE_MS;
    const callTimeoutMs = this.opts.callTimeoutMs ?? OUTBOX_CALL_TIMEOUT_MS;
    const claim = randomUUID();
    let rows: Row[];
    const sent = Date.now();
    // Due rows, or (for the ids just committed) rows nobody holds: a new row's next_attempt_at comes from this
    // process's clock, which may run ahead of the database's. A held row is due again only when its lease ends.
    const which = ids
      ? `c.id in (?) and (c.next_attempt_at <= now()
           or c.claimed_by is null and c.next_attempt_at <= now() + interval '30 seconds')`
      : 'c.next_attempt_at <= now()';
    try {
      rows = await this.orm.em
        .fork()
        .getConnection()
        .execute<Row[]>(
          `update outbox set next_attempt_at = now() + make_interval(secs => ?), claimed_by = ?
            where id in (
              select c.id from outbox c
               where ${which}
                 and not exists (select 1 from outbox o where o.workflow_id = c.workflow_id and o.id < c.id)
               order by c.id limit ? for update skip locked)
            returning id, kind, workflow_id, payload, attempts`,
          [leaseMs / 1000, claim, ...(ids ? [ids] : []), this.opts.batch ?? 200],
          'all',
        );
    } catch (err) {
      this.logger.warn({ err }, 'outbox dispatch failed; the relay will retry');
      return 0;
    }
    if (rows.length === 0) return 0;
    rows.sort((a, b) => Number(a.id) - Number(b.id));
    const lease = new Lease(this.orm, claim, sent + leaseMs, leaseMs);
    const done: string[] = [];
    let next = 0;
    const lane = async () => {
      while (next < rows.length) {
        const row = rows[next++];
        if (this.downSince !== null) {
          await this.release(row, null, claim);
          continue;
        }
        // Not enough of the claim left for a whole call (renewals fail): leave the row to whoever takes it next.
        if (!lease.holds(String(row.id), callTimeoutMs + spareMs(leaseMs))) continue;
        try {
          await this.call(callTimeoutMs, () => this.execute(row.payload));
          done.push(String(row.id));
        } catch (err) {
          if (isTemporalUnavailable(err)) {
            this.markDown(err);
            await this.release(row, err, claim);
          } else await this.fail(row, err, claim);
        }
      }
    };
    try {
      await Promise.all(Array.from({ length: Math.min(this.opts.concurrency ?? 32, rows.length) }, lane));
    } finally {
      await lease.stop();
    }
    if (done.length > 0) {
      this.stats.executed += done.length;
      // If this fails (database down) the rows come back after their lease and run again: harmless.
      await this.orm.em
        .fork()
        .getConnection()
        .execute('delete from outbox where id in (?)', [done], 'run')
        .catch((err) => this.logger.warn({ err }, 'could not delete executed outbox commands; they will repeat'));
    }
    // Entries given back because Temporal is down are due again at once: claiming them again now
    // would spin, so report nothing to drain until Temporal answers.
    return this.downSince === null ? rows.length : 0;
  }

  /** One Temporal call, bounded (`boundedCall`). */
  private async call(timeoutMs: number, fn: () => Promise<void>): Promise<void> {
    await boundedCall(this.temporal.connection, timeoutMs, fn);
  }

  /** Temporal was down: give the entry back at once (if still ours), without counting an attempt. */
  private async release(row: Row, err: unknown, claim: string): Promise<void> {
    this.stats.deferred++;
    await this.orm.em
      .fork()
      .getConnection()
      .execute(
        `update outbox set next_attempt_at = now(), claimed_by = null, last_error = coalesce(?, last_error)
          where id = ? and claimed_by = ?`,
        [err ? String((err as Error)?.message ?? err).slice(0, 2000) : null, row.id, claim],
        'run',
      )
      .catch(() => undefined); // the lease runs out on its own
  }

  /** The command itself failed: retry it later with backoff. */
  private async fail(row: Row, err: unknown, claim: string): Promise<void> {
    this.stats.failed++;
    const backoffS = Math.min(300, 2 ** Math.min(row.attempts, 8));
    if (err instanceof UnknownWorkflowCommandError)
      this.logger.error(
        { workflowId: row.workflow_id, kind: row.kind, attempts: row.attempts + 1, reason: err.message },
        'outbox command refused: it names a workflow type or signal this build does not define; it stays in the ' +
          'outbox for a build that does',
      );
    else
      this.logger.warn(
        { err, workflowId: row.workflow_id, kind: row.kind, attempts: row.attempts + 1 },
        'outbox command failed; will retry',
      );
    await this.orm.em
      .fork()
      .getConnection()
      .execute(
        `update outbox set attempts = attempts + 1, last_error = ?, claimed_by = null, next_attempt_at = now() +
          make_interval(secs => ?) where id = ? and claimed_by = ?`,
        [String((err as Error)?.message ?? err).slice(0, 2000), backoffS, row.id, claim],
        'run',
      )
      .catch(() => undefined);
  }

  /**
   * Carries out one command now, as the relay would (same options, search attributes and summary):
   * for a caller that needs the workflow before the relay gets to the command's outbox row (which,
   * when it runs, finds the workflow there and does nothing).
   */
  async carryOut(cmd: TemporalCommand, timeoutMs = this.opts.callTimeoutMs ?? OUTBOX_CALL_TIMEOUT_MS): Promise<void> {
    await this.call(timeoutMs, () => this.execute(cmd));
  }

  private async execute(cmd: StoredCommand): Promise<void> {
    const wf = this.temporal.client.workflow;
    const def = checkStoredCommand(cmd);
    switch (cmd.kind) {
      case 'start': {
        const replace = cmd.onExisting === 'replace';
        const reuse = replace || cmd.onExisting === 'restart';
        try {
          await wf.start(def!.name, {
            taskQueue: this.temporal.taskQueue,
            workflowId: cmd.workflowId,
            args: cmd.args,
            typedSearchAttributes: toSearchAttributePairs(cmd.searchAttributes),
            staticSummary: cmd.summary,
            staticDetails: cmd.details,
            startDelay: cmd.startDelayMs,
            workflowIdConflictPolicy: replace ? 'TERMINATE_EXISTING' : 'USE_EXISTING',
            workflowIdReusePolicy: reuse ? 'ALLOW_DUPLICATE' : 'REJECT_DUPLICATE',
          });
        } catch (err) {
          // Already ran to completion under this id: the command was carried out before.
          if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
        }
        return;
      }
      case 'signalWithStart': {
        // Signals the running workflow, or starts a new run (also after an earlier run finished).
        await wf.signalWithStart(def!.name, {
          taskQueue: this.temporal.taskQueue,
          workflowId: cmd.workflowId,
          args: cmd.args,
          signal: cmd.signal,
          signalArgs: cmd.signalArgs,
          typedSearchAttributes: toSearchAttributePairs(cmd.searchAttributes),
          staticSummary: cmd.summary,
          staticDetails: cmd.details,
          workflowIdReusePolicy: 'ALLOW_DUPLICATE',
        });
        return;
      }
      case 'signal':
      case 'cancel':
      case 'terminate': {
        const handle = wf.getHandle(cmd.workflowId);
        try {
          if (cmd.kind === 'signal') await handle.signal(cmd.signal, ...cmd.args);
          else if (cmd.kind === 'cancel') await handle.cancel();
          else await handle.terminate(cmd.reason);
        } catch (err) {
          // Nothing running under this id any more: nothing left to tell it.
          if (!(err instanceof WorkflowNotFoundError)) throw err;
        }
        return;
      }
    }
  }

  /** Polls for due entries until stopped. */
  start(): void {
    this.stopped = false;
    const tick = async () => {
      if (this.stopped) return;
      this.running = (async () => {
        for (const sweep of this.sweeps) {
          await sweep
            .run()
            .catch((err) => this.logger.warn({ err, sweep: sweep.name }, 'relay sweep failed; will retry'));
        }
        if (!(await this.temporalUp().catch(() => false))) return;
        while ((await this.dispatch()) > 0 && !this.stopped) {
          /* drain */
        }
      })();
      await this.running;
      if (!this.stopped) this.timer = setTimeout(tick, this.pollMs);
    };
    this.timer = setTimeout(tick, 0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
    await this.idle();
  }
}

/**
 * One dispatch pass's claim: renewed every quarter of the lease while the pass works, and known locally only as
 * far as the last renewal that came back (counted from when it was sent, so never later than the database's).
 */
class Lease {
  private timer: NodeJS.Timeout;
  private renewing: Promise<void> | undefined;
  /** Rows the last renewal found still claimed by us (all of them until one comes back). */
  private ours: Set<string> | null = null;

  constructor(
    private readonly orm: Orm,
    private readonly claim: string,
    private until: number,
    private readonly leaseMs: number,
  ) {
    this.timer = setInterval(() => {
      this.renewing ??= this.renew().finally(() => (this.renewing = undefined));
    }, leaseMs / 4).unref();
  }

  /** Whether the row is ours for at least `ms` more. */
  holds(id: string, ms: number): boolean {
    return Date.now() + ms <= this.until && (this.ours === null || this.ours.has(id));
  }

  private async renew(): Promise<void> {
    const sent = Date.now();
    try {
      const rows = await this.orm.em
        .fork()
        .getConnection()
        .execute<{ id: string }[]>(
          'update outbox set next_attempt_at = now() + make_interval(secs => ?) where claimed_by = ? returning id',
          [this.leaseMs / 1000, this.claim],
          'all',
        );
      this.until = sent + this.leaseMs;
      this.ours = new Set(rows.map((r) => String(r.id)));
    } catch {
      // Not renewed: calls stop starting once too little of the claim is left.
    }
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.renewing;
  }
}
