import type { EntityManager } from '@mikro-orm/postgresql';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import type { SearchAttributePair } from '@temporalio/common';
import { SA, type SearchAttributeName, type SearchAttributeValues } from '../../workflows/shared.js';
import type { Orm } from '../db/orm.js';
import type { Logger } from '../logger.js';
import type { TemporalHandle } from './client.js';
import { OutboxEntry } from './outbox.entities.js';

interface StartFields {
  workflowType: string;
  workflowId: string;
  args: unknown[];
  searchAttributes?: SearchAttributeValues;
  /** One line shown in the Temporal UI's workflow list. */
  summary?: string;
  /** Longer markdown shown on the workflow's page. */
  details?: string;
  startDelayMs?: number;
  /**
   * `keep` (default): a second start of a running or finished workflow with this id is a no-op.
   * `replace`: a running workflow with this id is terminated and a new one starts (re-targeting a timer).
   */
  onExisting?: 'keep' | 'replace';
}

/** What the service asks of Temporal, written to the outbox in the transaction of the change. */
export type TemporalCommand =
  | ({ kind: 'start' } & StartFields)
  | ({ kind: 'signalWithStart'; signal: string; signalArgs: unknown[] } & StartFields)
  | { kind: 'signal'; workflowId: string; signal: string; args: unknown[] }
  | { kind: 'cancel'; workflowId: string }
  | { kind: 'terminate'; workflowId: string; reason: string };

/** Adds a command to the outbox. Call inside the transaction that makes the change; it is flushed with it. */
export function enqueueTemporal(em: EntityManager, cmd: TemporalCommand) {
  const { kind, workflowId } = cmd;
  return em.create(OutboxEntry, {
    kind,
    workflowId,
    workflowType: cmd.kind === 'start' || cmd.kind === 'signalWithStart' ? cmd.workflowType : null,
    payload: cmd as unknown as Record<string, unknown>,
  });
}

export function toSearchAttributePairs(values: SearchAttributeValues | undefined): SearchAttributePair[] {
  const pairs: SearchAttributePair[] = [];
  for (const [name, value] of Object.entries(values ?? {})) {
    if (value === undefined || value === null) continue;
    const key = SA[name as SearchAttributeName];
    if (!key) throw new Error(`unknown search attribute ${name}`);
    pairs.push((key.type === 'DATETIME' ? { key, value: new Date(value) } : { key, value }) as SearchAttributePair);
  }
  return pairs;
}

interface Row {
  id: string;
  kind: string;
  workflow_id: string;
  payload: TemporalCommand;
  attempts: number;
}

/**
 * Executes outbox commands against Temporal. The service calls `dispatch(ids)` right after a commit;
 * the relay loop (run by the worker) retries whatever is still there, so a crash between commit and
 * start loses nothing. Workflow-id rules make a repeated command harmless.
 */
export class OutboxRelay {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private stopped = false;
  private readonly sweeps: { name: string; run: () => Promise<unknown> }[] = [];

  /** Work the relay also does on every tick (e.g. finishing event fan-outs a crash left behind). */
  addSweep(name: string, run: () => Promise<unknown>): void {
    this.sweeps.push({ name, run });
  }

  constructor(
    private readonly orm: Orm,
    private readonly temporal: TemporalHandle,
    private readonly logger: Logger,
    private readonly pollMs = 2000,
  ) {}

  /** Runs the given entries now (or every due entry when no ids are given). Never throws. */
  async dispatch(ids?: number[]): Promise<number> {
    if (ids && ids.length === 0) return 0;
    try {
      return await this.orm.em.fork().transactional(async (em) => {
        const conn = em.getConnection();
        const trx = em.getTransactionContext();
        const rows = await conn.execute<Row[]>(
          `select id, kind, workflow_id, payload, attempts from outbox
            where ${ids ? 'id in (?)' : 'next_attempt_at <= now()'}
            order by id limit 100 for update skip locked`,
          ids ? [ids] : [],
          'all',
          trx,
        );
        if (rows.length === 0) return 0;
        // Commands for one workflow run in order: a workflow whose oldest pending command is not in
        // this batch (another dispatcher has it, or it waits for a retry) is left for later.
        const oldest = await conn.execute<{ workflow_id: string; id: string }[]>(
          'select workflow_id, min(id) as id from outbox where workflow_id in (?) group by workflow_id',
          [[...new Set(rows.map((r) => r.workflow_id))]],
          'all',
          trx,
        );
        const claimed = new Set(rows.map((r) => String(r.id)));
        const blocked = new Set(oldest.filter((o) => !claimed.has(String(o.id))).map((o) => o.workflow_id));
        let done = 0;
        for (const row of rows) {
          if (blocked.has(row.workflow_id)) continue;
          try {
            await this.execute(row.payload);
            await conn.execute('delete from outbox where id = ?', [row.id], 'run', trx);
            done++;
          } catch (err) {
            blocked.add(row.workflow_id);
            const backoffS = Math.min(300, 2 ** Math.min(row.attempts, 8));
            this.logger.warn(
              { err, workflowId: row.workflow_id, kind: row.kind, attempts: row.attempts + 1 },
              'outbox command failed; will retry',
            );
            await conn.execute(
              `update outbox set attempts = attempts + 1, last_error = ?, next_attempt_at = now() +
                make_interval(secs => ?) where id = ?`,
              [String((err as Error)?.message ?? err).slice(0, 2000), backoffS, row.id],
              'run',
              trx,
            );
          }
        }
        return done;
      });
    } catch (err) {
      this.logger.warn({ err }, 'outbox dispatch failed; the relay will retry');
      return 0;
    }
  }

  private async execute(cmd: TemporalCommand): Promise<void> {
    const wf = this.temporal.client.workflow;
    switch (cmd.kind) {
      case 'start': {
        const replace = cmd.onExisting === 'replace';
        try {
          await wf.start(cmd.workflowType, {
            taskQueue: this.temporal.taskQueue,
            workflowId: cmd.workflowId,
            args: cmd.args,
            typedSearchAttributes: toSearchAttributePairs(cmd.searchAttributes),
            staticSummary: cmd.summary,
            staticDetails: cmd.details,
            startDelay: cmd.startDelayMs,
            workflowIdConflictPolicy: replace ? 'TERMINATE_EXISTING' : 'USE_EXISTING',
            workflowIdReusePolicy: replace ? 'ALLOW_DUPLICATE' : 'REJECT_DUPLICATE',
          });
        } catch (err) {
          // Already ran to completion under this id: the command was carried out before.
          if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
        }
        return;
      }
      case 'signalWithStart': {
        // Signals the running workflow, or starts a new run (also after an earlier run finished).
        await wf.signalWithStart(cmd.workflowType, {
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
  }
}
