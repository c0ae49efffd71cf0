// The reconciler: proves every row that waits on a workflow has one, and repairs the ones that do
// not. Run by the Temporal Schedule `reconciler/waiting-rows` (every 10 minutes, the spec's due-pause
// check). A repair is an outbox command in a transaction (so it is carried out even if Temporal is
// briefly away) that starts a new run under the same business id only when none is running; the
// activities' own database guards (a delivery that is no longer pending, a checkout no longer
// `created`, a pause already resumed, an incentive already changed, a reservation no longer held) make a
// repeated repair harmless.
import { WorkflowNotFoundError } from '@temporalio/client';
import { incentiveExpiryCommand } from '../accounts/accounts.service.js';
import { checkoutWorkflowStart } from '../checkouts/checkouts.service.js';
import { sql } from '../db/sql.js';
import { inTransaction } from '../db/transaction.js';
import type { Deps } from '../deps.js';
import { pauseCommand } from '../subscriptions/subscriptions.service.js';
import { sweepUntracked } from '../subscriptions/untracked.service.js';
import { reservationExpiryCommand } from '../usage/reservations.service.js';
import { deliveryCommand } from '../webhooks/deliveries.service.js';
import {
  checkoutWorkflowId,
  incentiveExpiryWorkflowId,
  pauseWorkflowId,
  RECONCILE_SCHEDULE_ID,
  reconcileDef,
  reservationExpiryWorkflowId,
  type ReconcileKind,
  type ReconcileResult,
} from '../../workflows/shared.js';
import { asRestart, type TemporalCommand } from '../temporal/outbox.js';
import { scheduledStart } from '../temporal/client.js';

/** Rows looked at per kind and run; the oldest first, so a large backlog is worked through run by run. */
const BATCH = 500;

type State = 'running' | 'closed' | 'missing';

async function workflowState(deps: Deps, workflowId: string): Promise<State> {
  try {
    const d = await deps.temporal.client.workflow.getHandle(workflowId).describe();
    return d.status.name === 'RUNNING' ? 'running' : 'closed';
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return 'missing';
    throw err;
  }
}

export async function reconcile(deps: Deps): Promise<ReconcileResult> {
  const em = () => deps.orm.em.fork();
  const graceS = deps.config.RECONCILE_GRACE_MS / 1000;
  const zero = (): Record<ReconcileKind, number> => ({
    deliveries: 0,
    checkouts: 0,
    pauses: 0,
    incentives: 0,
    reservations: 0,
    outbox: 0,
  });
  const result: ReconcileResult = { checked: zero(), repaired: zero(), restarted: [] };
  const log = deps.logger.child({ component: 'reconciler' });

  /**
   * For one candidate: when its workflow is not running, re-reads the row (it must still wait, since
   * a workflow moves its row before it ends) and enqueues the restart.
   */
  const repair = async (kind: ReconcileKind, workflowId: string, stillWaits: () => Promise<TemporalCommand | null>) => {
    result.checked[kind]++;
    if ((await workflowState(deps, workflowId)) === 'running') return;
    const cmd = await stillWaits();
    if (!cmd) return;
    await inTransaction(deps, em(), async (t) => t.temporal(asRestart(cmd)));
    result.repaired[kind]++;
    if (result.restarted.length < 50) result.restarted.push(workflowId);
    log.warn({ kind, workflowId }, 'reconciler: the workflow of a waiting row was gone; restarted it');
  };
  // A row whose command still waits in the outbox is the relay's to start, not ours.
  const noOutbox = (col: string) => `not exists (select 1 from outbox o where o.workflow_id = ${col})`;

  // Pending deliveries whose next attempt is overdue.
  const deliveries = await sql<{ id: string }>(
    em(),
    `select d.id from webhook_deliveries d
      where d.status = 'pending' and not d.test
        and coalesce(d.next_attempt_at, d.created_at) < now() - make_interval(secs => $1) and ${noOutbox('d.id')}
      order by coalesce(d.next_attempt_at, d.created_at) limit $2`,
    [graceS, BATCH],
  );
  for (const { id } of deliveries) {
    await repair('deliveries', id, async () => {
      const [d] = await sql<{
        id: string;
        app_id: string;
        endpoint_id: string;
        event_type: string;
        attempts: number;
        next_attempt_at: Date | null;
        url: string;
      }>(
        em(),
        `select d.id, d.app_id, d.endpoint_id, d.event_type, d.attempts, d.next_attempt_at, e.url
          from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id
          where d.id = $1 and d.status = 'pending'`,
        [id],
      );
      if (!d) return null;
      return deliveryCommand(
        deps,
        { id: d.id, appId: d.app_id, endpointId: d.endpoint_id, eventType: d.event_type },
        d.url,
        {
          startAttempt: d.attempts + 1,
          firstDelayMs: d.next_attempt_at ? Math.max(0, new Date(d.next_attempt_at).getTime() - Date.now()) : 0,
        },
      );
    });
  }

  // Open checkouts (each has a workflow until it completes, is cancelled or expires).
  const checkouts = await sql<{ id: string }>(
    em(),
    `select c.id from checkouts c
      where c.status = 'created' and c.created_at < now() - make_interval(secs => $1)
        and ${noOutbox(`'checkout/' || c.id`)}
      order by c.created_at limit $2`,
    [graceS, BATCH],
  );
  for (const { id } of checkouts) {
    await repair('checkouts', checkoutWorkflowId(id), async () => {
      const [c] = await sql<{
        id: string;
        app_id: string;
        account_id: string | null;
        offer_id: string | null;
        plan_id: string;
        created_at: Date;
      }>(
        em(),
        `select id, app_id, account_id, offer_id, plan_id, created_at from checkouts where id = $1 and status = 'created'`,
        [id],
      );
      if (!c) return null;
      return checkoutWorkflowStart(deps, c.app_id, {
        id: c.id,
        accountId: c.account_id,
        offerId: c.offer_id,
        planId: c.plan_id,
        createdAt: new Date(c.created_at),
      });
    });
  }

  // Due pauses: still paused past `resume_at` (the spec's due-pause check).
  const pauses = await sql<{ app_id: string; account_id: string; pause_count: number }>(
    em(),
    `select s.app_id, s.account_id, s.pause_count from subscriptions s
      where s.status = 'paused' and s.resume_at < now() - make_interval(secs => $1)
      order by s.resume_at limit $2`,
    [graceS, BATCH],
  );
  for (const p of pauses) {
    const workflowId = pauseWorkflowId(p.app_id, p.account_id, p.pause_count);
    const [queued] = await sql<{ n: number }>(em(), 'select count(*)::int as n from outbox where workflow_id = $1', [
      workflowId,
    ]);
    if (queued.n > 0) continue;
    await repair('pauses', workflowId, async () => {
      const [s] = await sql<{
        paused_at: Date;
        resume_at: Date;
        restore_plan_id: string | null;
        pause_reason: string | null;
        plan_id: string;
      }>(
        em(),
        `select s.paused_at, s.resume_at, s.restore_plan_id, s.pause_reason, a.plan_id
          from subscriptions s join accounts a on a.app_id = s.app_id and a.id = s.account_id
          where s.app_id = $1 and s.account_id = $2 and s.status = 'paused' and s.pause_count = $3`,
        [p.app_id, p.account_id, p.pause_count],
      );
      if (!s) return null;
      return pauseCommand(
        {
          appId: p.app_id,
          accountId: p.account_id,
          pause: p.pause_count,
          resumeAt: new Date(s.resume_at).toISOString(),
          restorePlan: s.restore_plan_id ?? s.plan_id,
          pausedAt: new Date(s.paused_at).toISOString(),
        },
        s.pause_reason,
      );
    });
  }

  // Incentives past their expiry that are still on the account.
  const incentives = await sql<{ app_id: string; id: string }>(
    em(),
    `select a.app_id, a.id from accounts a
      where a.incentive_id is not null and a.incentive_expires_at < now() - make_interval(secs => $1)
      order by a.incentive_expires_at limit $2`,
    [graceS, BATCH],
  );
  for (const a of incentives) {
    const workflowId = incentiveExpiryWorkflowId(a.app_id, a.id);
    const [queued] = await sql<{ n: number }>(em(), 'select count(*)::int as n from outbox where workflow_id = $1', [
      workflowId,
    ]);
    if (queued.n > 0) continue;
    await repair('incentives', workflowId, async () => {
      const [row] = await sql<{ incentive_id: string | null; incentive_expires_at: Date | null }>(
        em(),
        `select incentive_id, incentive_expires_at from accounts
          where app_id = $1 and id = $2 and incentive_id is not null and incentive_expires_at < now()`,
        [a.app_id, a.id],
      );
      if (!row?.incentive_id || !row.incentive_expires_at) return null;
      return incentiveExpiryCommand(a.app_id, a.id, row.incentive_id, new Date(row.incentive_expires_at));
    });
  }

  // Reservations still held past their deadline: their expiry workflow releases the hold (at once,
  // since the deadline passed).
  const reservations = await sql<{ app_id: string; id: string }>(
    em(),
    `select r.app_id, r.id from usage_reservations r
      where r.status = 'held' and r.expires_at < now() - make_interval(secs => $1)
        and ${noOutbox(`'reservation-expiry/' || r.app_id || '/' || r.id`)}
      order by r.expires_at limit $2`,
    [graceS, BATCH],
  );
  for (const r of reservations) {
    await repair('reservations', reservationExpiryWorkflowId(r.app_id, r.id), async () => {
      const [row] = await sql<{ account_id: string; entitlement_id: string; amount: string; expires_at: Date }>(
        em(),
        `select account_id, entitlement_id, amount, expires_at from usage_reservations
          where app_id = $1 and id = $2 and status = 'held'`,
        [r.app_id, r.id],
      );
      if (!row) return null;
      return reservationExpiryCommand({
        appId: r.app_id,
        accountId: row.account_id,
        entitlementId: row.entitlement_id,
        reservationId: r.id,
        amount: Number(row.amount),
        expiresAt: new Date(row.expires_at).toISOString(),
      });
    });
  }

  // Outbox commands overdue (no relay running, or one that keeps failing): carried out here.
  const [stuck] = await sql<{ n: number }>(
    em(),
    `select count(*)::int as n from outbox
      where next_attempt_at < now() - make_interval(secs => $1) and created_at < now() - make_interval(secs => $1)`,
    [graceS],
  );
  result.checked.outbox = stuck.n;
  if (stuck.n > 0) {
    let runs = 0;
    while ((await deps.outbox.dispatch()) > 0 && runs++ < 50) {
      /* drain */
    }
    const [left] = await sql<{ n: number }>(
      em(),
      `select count(*)::int as n from outbox
        where next_attempt_at < now() - make_interval(secs => $1) and created_at < now() - make_interval(secs => $1)`,
      [graceS],
    );
    result.repaired.outbox = Math.max(0, stuck.n - left.n);
  }

  // Live provider subscriptions offerkit made but does not track: duplicates are cancelled, others reported.
  await sweepUntracked(deps).catch((err: unknown) =>
    log.warn({ err }, 'reconciler: untracked subscriptions sweep failed'),
  );

  await deps.outbox.idle();
  const repairedKinds = Object.entries(result.repaired).filter(([, n]) => n > 0);
  for (const [kind, n] of repairedKinds)
    await sql(
      em(),
      `insert into reconciler_repairs (kind, repaired, last_repaired_at) values ($1, $2, now())
        on conflict (kind) do update set repaired = reconciler_repairs.repaired + excluded.repaired,
          last_repaired_at = now()`,
      [kind, n],
    );
  log[repairedKinds.length ? 'warn' : 'info'](
    { checked: result.checked, repaired: result.repaired, restarted: result.restarted },
    repairedKinds.length
      ? 'reconciler repaired waiting rows whose workflow was gone'
      : 'reconciler: every waiting row has its workflow',
  );
  return result;
}

/** Creates the reconciler's Schedule, or brings its interval up to date. Idempotent. */
export async function ensureReconcileSchedule(deps: Deps): Promise<void> {
  const every = deps.config.RECONCILE_EVERY_MS;
  const client = deps.temporal.client.schedule;
  const action = scheduledStart(reconcileDef, {
    taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
    args: [],
    workflowId: 'reconciler/run',
    staticSummary: 'Restart or finish waiting rows whose workflow is missing, failed or ended',
  });
  try {
    await client.create({
      scheduleId: RECONCILE_SCHEDULE_ID,
      spec: { intervals: [{ every }] },
      policies: { overlap: 'SKIP', catchupWindow: '10 minutes' },
      action,
      memo: {
        description:
          'Every 10 minutes: pending deliveries, open checkouts, due pauses, expired incentives, reservations held ' +
          'past their deadline and overdue outbox commands whose workflow is gone are restarted or finished, once.',
      },
    });
    deps.logger.info({ scheduleId: RECONCILE_SCHEDULE_ID, everyMs: every }, 'created the reconciler schedule');
  } catch (err) {
    if ((err as Error).name !== 'ScheduleAlreadyRunning') throw err;
    await client.getHandle(RECONCILE_SCHEDULE_ID).update((prev) => ({
      ...prev,
      spec: { intervals: [{ every }] },
      action: { ...action },
    }));
  }
}
