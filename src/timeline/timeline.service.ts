// An account's billing timeline: written where things happen (intents by the actor's activities, refusals by the
// API, provider notifications by their route, the actor's dates by its timers) and, for outcomes, by an event
// subscriber that sees every billing event in the transaction that emits it.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import type { Ctx } from '../context.js';
import type { Config } from '../config.js';
import { sql } from '../db/sql.js';
import type { Tx } from '../db/transaction.js';
import type { IEvent } from '../events/events.entities.js';
import { cursorAtSql, cursorPage } from '../http/pagination.js';
import { badRequest } from '../errors.js';
import { iso } from '../time.js';
import { temporalWorkflowUrl } from '../temporal/ui.js';
import type { Requester } from '../../workflows/billing-rules.js';
import { billingScope } from './scope.js';
import type { TimelineKind } from './timeline.entities.js';
import type { timelineEntrySchema, timelinePageSchema, timelineQuery } from './timeline.schemas.js';

export interface TimelineLine {
  appId: string;
  accountId: string;
  kind: TimelineKind;
  type: string;
  summary: string;
  by?: Requester | null;
  amount?: { value: number; currency: string } | null;
  eventId?: string | null;
  data?: Record<string, unknown> | null;
  /** Defaults to the billing scope's (the actor's run). */
  workflowId?: string | null;
  runId?: string | null;
}

/**
 * Writes one line in the caller's transaction (or alone). The account must exist (a line goes with its account);
 * a line for an account that is gone is dropped.
 */
export async function recordTimeline(em: EntityManager, line: TimelineLine): Promise<void> {
  const scope = billingScope();
  await sql(
    em,
    `insert into account_timeline (app_id, account_id, app_time, kind, type, summary, by, amount, event_id, workflow_id,
       run_id, data)
     select a.app_id, a.id, now() + make_interval(secs => coalesce(ap.clock_offset_ms, 0) / 1000.0), $3, $4, $5,
       $6::jsonb, $7::jsonb, $8, $9, $10, $11::jsonb
       from accounts a join apps ap on ap.id = a.app_id where a.app_id = $1::varchar and a.id = $2::varchar`,
    [
      line.appId,
      line.accountId,
      line.kind,
      line.type.slice(0, 255),
      line.summary,
      JSON.stringify(line.by === undefined ? (scope?.by ?? null) : line.by),
      line.amount ? JSON.stringify(line.amount) : null,
      line.eventId ?? null,
      line.workflowId === undefined ? (scope?.workflowId ?? null) : line.workflowId,
      line.runId === undefined ? (scope?.runId ?? null) : line.runId,
      line.data ? JSON.stringify(line.data) : null,
    ],
  );
}

// ---- outcomes: the billing events, as they are emitted ------------------------------------------------------

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj | null => (v && typeof v === 'object' ? (v as Obj) : null);

/** The account an event is about: `data.object` (an account) or `data.account` (a checkout's, a session's). */
function accountOf(event: IEvent): string | null {
  const d = event.data;
  if (event.type.startsWith('checkout.') || event.type.startsWith('cancel_flow.'))
    return (obj(d.account)?.id as string | undefined) ?? null;
  const o = obj(d.object);
  if (typeof o?.id === 'string' && 'plan' in o) return o.id;
  if (typeof o?.account_id === 'string') return o.account_id;
  return null;
}

const BILLING_EVENT =
  /^(subscription\.|checkout\.completed$|cancel_flow\.|account\.(plan_changed|incentive_applied|incentive_removed|addon_granted)$|credits\.)/;

function money(event: IEvent): { value: number; currency: string } | null {
  const d = event.data;
  const sub = obj(obj(d.object)?.subscription);
  if (event.type === 'subscription.renewed' && sub) return { value: Number(sub.price), currency: String(sub.currency) };
  if (event.type === 'checkout.completed') {
    const c = obj(d.object);
    if (c && typeof c.price === 'number') return { value: c.price, currency: String(c.currency) };
  }
  const proration = obj(d.proration);
  if (event.type === 'subscription.changed' && proration?.status === 'captured')
    return { value: Number(proration.amount), currency: String(proration.currency) };
  return null;
}

function summaryOf(event: IEvent): string {
  const d = event.data;
  const o = obj(d.object);
  const sub = obj(o?.subscription);
  const prev = obj(d.previous);
  switch (event.type) {
    case 'subscription.changed':
      return (
        `Plan changed from ${prev?.plan ?? '?'} to ${sub?.plan ?? o?.plan ?? '?'} ` +
        `(${sub?.price ?? '?'} ${sub?.currency ?? ''}/${sub?.interval ?? ''})`
      );
    case 'subscription.renewed':
      return `Renewed: ${sub?.price ?? '?'} ${sub?.currency ?? ''} charged`;
    case 'subscription.cancelled':
      return `Subscription cancelled; account on ${o?.plan ?? '?'}`;
    case 'subscription.paused': {
      // The day, as the other summaries write dates (the exact time is in the event's data).
      const resumeAt = obj(sub?.pause)?.resume_at;
      return `Paused until ${typeof resumeAt === 'string' ? resumeAt.slice(0, 10) : '?'}`;
    }
    case 'subscription.change_scheduled': {
      const change = obj(sub?.scheduled_change) ?? obj(sub?.pending_change);
      const renewsAt = sub?.renews_at;
      return `Change to ${change?.plan ?? '?'} scheduled${typeof renewsAt === 'string' ? ` for ${renewsAt.slice(0, 10)}` : ''}`;
    }
    case 'subscription.resumed':
      return `Resumed; back on ${o?.plan ?? '?'}`;
    case 'account.plan_changed':
      return `Account moved from ${prev?.plan ?? '?'} to ${o?.plan ?? '?'}`;
    default:
      return typeof d.summary === 'string' ? d.summary : event.type.replace(/[._]/g, ' ');
  }
}

/** An outcome line's data: the event's reason, and the request of the intent that caused it (when one did). */
function outcomeData(event: IEvent): Record<string, unknown> | null {
  const requestId = billingScope()?.requestId ?? null;
  const data = {
    ...(typeof event.data.reason === 'string' ? { reason: event.data.reason } : {}),
    ...(requestId ? { request_id: requestId } : {}),
  };
  return Object.keys(data).length ? data : null;
}

/** The event subscriber: each billing event of an account becomes an outcome line, in the event's transaction. */
export async function timelineSubscriber(tx: Tx, event: IEvent): Promise<void> {
  if (!BILLING_EVENT.test(event.type)) return;
  const accountId = accountOf(event);
  if (!accountId) return;
  await recordTimeline(tx.em, {
    appId: event.appId,
    accountId,
    kind: 'outcome',
    type: event.type,
    summary: summaryOf(event),
    amount: money(event),
    eventId: event.id,
    data: outcomeData(event),
  });
}

// ---- reading ------------------------------------------------------------------------------------------------

interface Row {
  id: string;
  at: Date;
  app_time: Date;
  kind: TimelineKind;
  type: string;
  summary: string;
  by: Requester | null;
  amount: { value: number; currency: string } | null;
  event_id: string | null;
  event_type: string | null;
  workflow_id: string | null;
  run_id: string | null;
  data: Record<string, unknown> | null;
  cursor_at: string;
}

function present(config: Config, r: Row): z.input<typeof timelineEntrySchema> {
  return {
    id: String(r.id),
    at: iso(r.at)!,
    app_time: iso(r.app_time)!,
    kind: r.kind,
    type: r.type,
    summary: r.summary,
    by: r.by,
    amount: r.amount,
    event: r.event_id ? { id: r.event_id, type: r.event_type ?? r.type } : null,
    workflow: r.workflow_id
      ? { id: r.workflow_id, run_id: r.run_id, url: temporalWorkflowUrl(config, r.workflow_id, r.run_id) }
      : null,
    data: r.data,
  };
}

/** The account's timeline, newest first, a page at a time. */
export async function listTimeline(
  ctx: Ctx,
  accountId: string,
  q: z.output<typeof timelineQuery>,
): Promise<z.input<typeof timelinePageSchema>> {
  const params: unknown[] = [ctx.app.id, accountId, q.limit + 1];
  let where = 't.app_id = $1 and t.account_id = $2';
  if (q.kind) {
    params.push(q.kind);
    where += ` and t.kind = $${params.length}`;
  }
  if (q.cursor) {
    if (!/^\d{1,18}$/.test(q.cursor.id)) throw badRequest('cursor: is not a next_cursor this list answered');
    params.push(q.cursor.id);
    where += ` and t.id < $${params.length}::bigint`;
  }
  const rows = await sql<Row>(
    ctx.em,
    `select t.id::text as id, t.at, t.app_time, t.kind, t.type, t.summary, t.by, t.amount, t.event_id,
            t.type as event_type, t.workflow_id, t.run_id, t.data, ${cursorAtSql('t.at')} as cursor_at
       from account_timeline t where ${where} order by t.id desc limit $3`,
    params,
  );
  const page = cursorPage(rows, q.limit, (r) => ({ at: r.cursor_at, id: String(r.id) }));
  return { data: page.rows.map((r) => present(ctx.deps.config, r)), next_cursor: page.next_cursor };
}
