// The reconciler: proves every row that waits on a workflow has one, and repairs the ones that do
// not. Run by the Temporal Schedule `reconciler/waiting-rows` (every 10 minutes, the spec's due-pause
// check). A repair is an outbox command in a transaction (so it is carried out even if Temporal is
// briefly away) that starts a new run under the same business id only when none is running; the
// activities' own database guards (a delivery that is no longer pending, a checkout no longer
// `created`, a pause already resumed, an incentive already changed, a reservation no longer held) make a
// repeated repair harmless.
import { WorkflowNotFoundError } from '@temporalio/client';
import { checkoutWorkflowStart } from '../checkouts/checkouts.service.js';
import { sql } from '../db/sql.js';
import { inTransaction } from '../db/transaction.js';
import type { Deps } from '../deps.js';
import { actorFact } from '../subscriptions/actor-facts.js';
import { billingDrift } from '../subscriptions/drift.service.js';
import { sweepUntracked } from '../subscriptions/untracked.service.js';
import { reservationExpiryCommand } from '../usage/reservations.service.js';
import { deliveryCommand } from '../webhooks/deliveries.service.js';
import {
  accountWorkflowId,
  checkoutWorkflowId,
  RECONCILE_SCHEDULE_ID,
  reconcileDef,
  reservationExpiryWorkflowId,
  type CreditDrift,
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
    actors: 0,
    billing: 0,
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
        expires_at: Date | null;
        clock_offset_ms: string;
      }>(
        em(),
        `select c.id, c.app_id, c.account_id, c.offer_id, c.plan_id, c.created_at, c.expires_at, a.clock_offset_ms
           from checkouts c join apps a on a.id = c.app_id where c.id = $1 and c.status = 'created'`,
        [id],
      );
      if (!c) return null;
      return checkoutWorkflowStart(
        deps,
        c.app_id,
        {
          id: c.id,
          accountId: c.account_id,
          offerId: c.offer_id,
          planId: c.plan_id,
          createdAt: new Date(c.created_at),
          expiresAt: c.expires_at ? new Date(c.expires_at) : null,
        },
        Number(c.clock_offset_ms),
      );
    });
  }

  // Accounts with anything over time (a live subscription, a timed incentive) each have their actor running; one
  // that is gone (terminated by hand, failed, or never started because its fact was lost) is started again, and it
  // reads the record and the provider at once (its dates that passed meanwhile run then: the spec's due pauses).
  const owners = await sql<{ app_id: string; account_id: string }>(
    em(),
    `select a.app_id, a.id as account_id from accounts a
       left join subscriptions s on s.app_id = a.app_id and s.account_id = a.id
      where (s.status in ('active', 'paused', 'past_due') or (a.incentive_id is not null and a.incentive_expires_at is not null))
        and a.created_at < now() - make_interval(secs => $1)
        and ${noOutbox(`'account/' || a.app_id || '/' || a.id`)}
      order by a.app_id, a.id limit $2`,
    [graceS, BATCH],
  );
  for (const o of owners)
    await repair('actors', accountWorkflowId(o.app_id, o.account_id), async () =>
      actorFact(o.app_id, o.account_id, { kind: 'adopted' }),
    );

  // The record against the provider: a live subscription whose provider status says otherwise (a notification that
  // never came) makes its actor read the provider again. A bounded batch per run, the least recently compared first.
  const live = await sql<{ app_id: string; account_id: string }>(
    em(),
    `select s.app_id, s.account_id from subscriptions s
       join payment_connections c on c.app_id = s.app_id
      where s.status in ('active', 'paused', 'past_due') and s.updated_at < now() - make_interval(secs => $1)
      order by s.updated_at limit $2`,
    [graceS, Math.min(BATCH, 100)],
  );
  for (const l of live) {
    result.checked.billing++;
    const drift = await billingDrift(deps, l.app_id, l.account_id).catch(() => null);
    if (!drift) continue;
    await inTransaction(deps, em(), async (t) =>
      t.temporal(
        actorFact(l.app_id, l.account_id, {
          kind: 'provider_notified',
          eventType: 'RECONCILER.DRIFT',
          notificationId: null,
        }),
      ),
    );
    result.repaired.billing++;
    log.warn({ app: l.app_id, account: l.account_id, drift }, 'reconciler: a subscription differs from the provider');
  }

  // Reservations still held past their deadline: their expiry workflow releases the hold (at once,
  // since the deadline passed).
  const reservations = await sql<{ app_id: string; id: string }>(
    em(),
    `select r.app_id, r.id from usage_reservations r join apps a on a.id = r.app_id
      where r.status = 'held'
        and r.expires_at < now() + make_interval(secs => a.clock_offset_ms / 1000.0) - make_interval(secs => $1)
        and ${noOutbox(`'reservation-expiry/' || r.app_id || '/' || r.id`)}
      order by r.expires_at limit $2`,
    [graceS, BATCH],
  );
  for (const r of reservations) {
    await repair('reservations', reservationExpiryWorkflowId(r.app_id, r.id), async () => {
      const [row] = await sql<{
        account_id: string;
        entitlement_id: string;
        amount: string;
        expires_at: Date;
        clock_offset_ms: string;
      }>(
        em(),
        `select r.account_id, r.entitlement_id, r.amount, r.expires_at, a.clock_offset_ms
           from usage_reservations r join apps a on a.id = r.app_id
          where r.app_id = $1 and r.id = $2 and r.status = 'held'`,
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
        ...(Number(row.clock_offset_ms) ? { offsetMs: Number(row.clock_offset_ms) } : {}),
      });
    });
  }

  // Credit balances against their ledgers. Reported, not repaired: which side is wrong (a lost ledger row, a balance
  // written by hand) is for a person to find, and rewriting a balance would grant or take credits silently.
  result.credits = await creditDrifts(deps);
  if (result.credits.drifts.length)
    log.error(
      { checked: result.credits.checked, drifts: result.credits.drifts },
      'reconciler: credit balances differ from their ledgers',
    );

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
  // All clear is one short line (the total checked); a repair names each kind.
  const total = Object.values(result.checked).reduce((a, b) => a + b, 0);
  if (!repairedKinds.length) log.info({ checked: total }, 'reconciler: every waiting row has its workflow');
  else
    log.warn(
      { checked: result.checked, repaired: result.repaired, restarted: result.restarted },
      'reconciler repaired waiting rows whose workflow was gone',
    );
  return result;
}

/**
 * The `BATCH` most recently changed credit balances, each against its ledger's sum, in one statement (one snapshot:
 * a balance and its ledger rows are written by the same transactions, so a difference is a drift, never a race).
 * Answers the ones that differ (at most 50).
 */
export async function creditDrifts(deps: Pick<Deps, 'orm'>): Promise<{ checked: number; drifts: CreditDrift[] }> {
  const rows = await sql<{
    checked: number;
    app_id: string | null;
    account_id: string;
    pool_id: string;
    entity_id: string;
    balance: string;
    ledger: string;
  }>(
    deps.orm.em.fork(),
    `with b as (select * from credit_balances order by updated_at desc limit $1),
     d as (
       select b.app_id, b.account_id, b.pool_id, b.entity_id, b.balance, l.total as ledger from b
       cross join lateral (
         select coalesce(sum(l.amount), 0) as total from credit_ledger l
          where l.app_id = b.app_id and l.account_id = b.account_id and l.pool_id = b.pool_id
            and l.entity_id = b.entity_id) l
       where l.total <> b.balance
       order by b.app_id, b.account_id, b.pool_id, b.entity_id limit 50)
     select (select count(*)::int from b) as checked, d.* from (select 1) one left join d on true`,
    [BATCH],
  );
  return {
    checked: rows[0]?.checked ?? 0,
    drifts: rows
      .filter((r) => r.app_id !== null)
      .map((r) => ({
        app_id: r.app_id!,
        account_id: r.account_id,
        pool_id: r.pool_id,
        entity_id: r.entity_id,
        balance: Number(r.balance),
        ledger: Number(r.ledger),
      })),
  };
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
          'Every 10 minutes: pending deliveries, open checkouts, account actors (due pauses, expired incentives), ' +
          'reservations held past their deadline and overdue outbox commands whose workflow is gone are restarted or ' +
          'finished, once; live subscriptions that differ from the provider are read again.',
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
