// The checks of `npm run chaos -- billing` (scripts/chaos-billing.ts), once everything has settled and the reconciler
// has run: every account agrees with the provider, nothing was charged twice, and every intent's answer tells the
// truth about what it did, as its account's timeline records it (each outcome line names the request that caused it).
import fs from 'node:fs';
import type pg from 'pg';
import type { Deps } from '../src/deps.js';
import { billingDrift } from '../src/subscriptions/drift.service.js';
import type { Asked, IntentKind } from './chaos-billing-customers.js';

// The stand-in's saved state (its `statePath` file): PayPal's loosely typed documents.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

/** The outcome lines an accepted intent of each kind writes, the first being the one it writes exactly once. */
const OUTCOMES: Record<IntentKind, string[]> = {
  change_now: ['change_requested'],
  change_renewal: ['change_requested', 'subscription.cancel_scheduled'],
  change_replace: ['change_requested'],
  withdraw: ['change_requested', 'subscription.change_dropped'],
  pause: ['subscription.paused'],
  resume: ['subscription.resumed', 'subscription.cancel_undone'],
  cancel_now: ['subscription.cancelled'],
  cancel_period_end: ['subscription.cancel_scheduled'],
  save_discount: ['change_requested'],
  save_downgrade: ['change_requested'],
  save_pause: ['subscription.paused'],
  save_incentive: ['account.incentive_applied'],
  retry_payment: ['subscription.recovered'],
};

interface Line {
  kind: string;
  type: string;
  rid: string;
  account_id: string;
}

export interface CheckResult {
  figures: string[];
  /** What is inconsistent: must stay empty. */
  problems: string[];
}

/** Every check; `statePath` is the stand-in's state file. */
export async function checkBilling(deps: Deps, db: pg.Pool, appIds: string[], asked: Asked[], statePath: string) {
  const figures: string[] = [];
  const problems: string[] = [];

  // ---- the record against the provider ------------------------------------------------------------------
  const subs = (
    await db.query(
      `select app_id, account_id, status, provider_subscription_id from subscriptions where app_id = any($1)`,
      [appIds],
    )
  ).rows as { app_id: string; account_id: string; status: string; provider_subscription_id: string }[];
  let drifted = 0;
  for (const s of subs) {
    const drift = await billingDrift(deps, s.app_id, s.account_id).catch(
      (err: unknown) => `not compared: ${String(err)}`,
    );
    if (drift) {
      drifted++;
      problems.push(`account ${s.account_id}: the record differs from the provider: ${drift}`);
    }
  }
  const byStatus = count(subs.map((s) => s.status));
  figures.push(
    `record against the provider (billingDrift): ${subs.length} subscriptions (${fmt(byStatus)}), ${drifted} differ`,
  );

  // ---- money: nothing charged twice ---------------------------------------------------------------------
  const state = JSON.parse(fs.readFileSync(statePath, 'utf8')) as Json;
  const checkouts = new Map(
    (
      (await db.query(`select id, account_id from checkouts where app_id = any($1)`, [appIds])).rows as {
        id: string;
        account_id: string;
      }[]
    ).map((c) => [c.id, c.account_id]),
  );
  // At most one live provider subscription per account (two would bill the buyer twice).
  const live = new Map<string, string[]>();
  for (const s of Object.values(state.subscriptions as Json)) {
    const account = checkouts.get(String(s.custom_id));
    if (!account || !['ACTIVE', 'SUSPENDED', 'APPROVED'].includes(String(s.status))) continue;
    live.set(account, [...(live.get(account) ?? []), String(s.id)]);
  }
  for (const [account, ids] of live)
    if (ids.length > 1)
      problems.push(`account ${account}: ${ids.length} live provider subscriptions (${ids.join(', ')})`);
  // Every captured order is the prorated difference of a change that applied with it captured, once.
  const changed = (
    await db.query(
      `select data->'object'->>'id' as account, data->'proration'->>'status' as status,
              (data->'proration'->>'amount')::float as amount
         from events where app_id = any($1) and type = 'subscription.changed' and data ? 'proration'`,
      [appIds],
    )
  ).rows as { account: string; status: string; amount: number }[];
  const ordersCaptured = new Map<string, number>();
  let orders = 0;
  for (const o of Object.values(state.orders as Json)) {
    orders++;
    if (o.status !== 'COMPLETED') continue;
    const cancelUrl = String(o.application_context?.cancel_url ?? '');
    const account = new URL(cancelUrl, 'http://x').searchParams.get('account') ?? '?';
    ordersCaptured.set(account, (ordersCaptured.get(account) ?? 0) + 1);
  }
  const recordedCaptured = count(changed.filter((c) => c.status === 'captured').map((c) => c.account));
  for (const account of new Set([...ordersCaptured.keys(), ...Object.keys(recordedCaptured)])) {
    const atProvider = ordersCaptured.get(account) ?? 0;
    const recorded = recordedCaptured[account] ?? 0;
    if (atProvider !== recorded)
      problems.push(
        `account ${account}: ${atProvider} prorated orders captured at the provider, ${recorded} recorded as applied`,
      );
  }
  const captures = Object.values(state.captures as Json);
  const completed = captures.filter((c) => c.status === 'COMPLETED' || c.status === 'REFUNDED').length;
  figures.push(
    `money: ${Object.keys(state.subscriptions).length} provider subscriptions, ${[...live.values()].flat().length} live ` +
      `(at most one per account: ${[...live.values()].every((x) => x.length <= 1) ? 'yes' : 'NO'}); ${completed} cycle ` +
      `payments captured; ${orders} prorated orders, ${[...ordersCaptured.values()].reduce((a, b) => a + b, 0)} ` +
      `captured, each matching one applied change: ${problems.some((p) => p.includes('prorated')) ? 'NO' : 'yes'}`,
  );

  // ---- every intent's answer against its account's timeline ----------------------------------------------
  const lines = (
    await db.query(
      `select kind, type, data->>'request_id' as rid, account_id from account_timeline
        where app_id = any($1) and data ? 'request_id'`,
      [appIds],
    )
  ).rows as Line[];
  const byRid = new Map<string, Line[]>();
  for (const l of lines) byRid.set(l.rid, [...(byRid.get(l.rid) ?? []), l]);
  const verdicts = { applied_once: 0, refused_nothing: 0, unavailable_nothing: 0, unknown_traced: 0 };
  for (const a of asked) {
    const mine = byRid.get(a.requestId) ?? [];
    const outcomes = mine.filter((l) => l.kind === 'outcome');
    const intentLine = mine.some((l) => l.kind === 'intent');
    const refusal = mine.some((l) => l.kind === 'refusal');
    const primary = outcomes.filter((l) => OUTCOMES[a.kind].includes(l.type));
    const once = count(primary.map((l) => l.type));
    const twice = Object.entries(once).filter(([, n]) => n > 1);
    const tag = `${a.kind} ${a.requestId} on ${a.account} answered ${a.status}${a.reason ? ` ${a.reason}` : ''}`;
    if (twice.length) problems.push(`${tag}: applied more than once (${fmt(once)})`);
    if (a.status === 200) {
      if (primary.length === 0) problems.push(`${tag}: answered 200 but its outcome is not on the timeline`);
      else verdicts.applied_once++;
    } else if (a.status >= 400 && a.status < 500) {
      if (outcomes.length)
        problems.push(`${tag}: refused, yet it applied (${fmt(count(outcomes.map((l) => l.type)))})`);
      else verdicts.refused_nothing++;
    } else if (a.nothing) {
      if (outcomes.length || intentLine)
        problems.push(`${tag}: said nothing was changed, yet it ran (${mine.map((l) => l.type).join(', ')})`);
      else verdicts.unavailable_nothing++;
    } else {
      // No answer, 503 "outcome unknown", or a 502: either it never ran, or its outcome or refusal is on the timeline.
      if (intentLine && !outcomes.length && !refusal)
        problems.push(`${tag}: taken by the actor, but neither its outcome nor its refusal is on the timeline`);
      else verdicts.unknown_traced++;
    }
  }
  // No intent lost silently: every intent the actor took has its outcome or its refusal.
  // (A sync that finds nothing new has no outcome: it is the probe's intent, not a customer's.)
  const taken = lines.filter((l) => l.kind === 'intent' && l.type !== 'sync');
  for (const l of taken) {
    const mine = byRid.get(l.rid) ?? [];
    if (!mine.some((x) => x.kind === 'outcome' || x.kind === 'refusal'))
      problems.push(
        `intent ${l.type} ${l.rid} on ${l.account_id}: taken, with no outcome and no refusal on the timeline`,
      );
  }
  figures.push(
    `intents against the timeline: answered 200 and applied once ${verdicts.applied_once}; refused (4xx) and applied ` +
      `nothing ${verdicts.refused_nothing}; 503 "nothing was changed" and nothing ran ${verdicts.unavailable_nothing}; ` +
      `no answer or "outcome unknown", traced on the timeline ${verdicts.unknown_traced}; taken by the actors ` +
      `${taken.length}, each with its outcome or refusal`,
  );
  return { figures, problems };
}

export function count(xs: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const x of xs) out[x] = (out[x] ?? 0) + 1;
  return out;
}

export const fmt = (c: Record<string, number>) =>
  Object.entries(c)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
