// The account actor's rules as a table: every intent in every state of a subscription, with the answer it gets
// (accepted, or refused with a reason). docs/billing.md shows the same table; a change to the rules changes both.
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import {
  billingStatusOf,
  hasAnythingOverTime,
  lateRefusal,
  refusalOf,
  timersOf,
  type BillingSnapshot,
  type ChangeSnapshot,
  type Intent,
  type SubscriptionSnapshot,
} from '../../workflows/billing-rules.js';

const change = (status: ChangeSnapshot['status']): ChangeSnapshot => ({
  id: 'chg_1',
  kind: 'change',
  status,
  plan: 'lite',
  planName: 'Lite',
  interval: 'month',
  price: 9,
  currency: 'USD',
  direction: 'downgrade',
  effective: 'renewal',
  requestedAt: '2026-11-28T00:00:00.000Z',
  expiresAt: status === 'awaiting_approval' ? '2026-11-28T03:00:00.000Z' : null,
  scheduledAt: status === 'scheduled' ? '2026-11-28T00:05:00.000Z' : null,
  sessionId: null,
  replaces: null,
});

const active: SubscriptionSnapshot = {
  id: 'I-1',
  status: 'active',
  plan: 'pro',
  planName: 'Pro',
  interval: 'month',
  price: 19,
  currency: 'USD',
  renewsAt: '2026-12-28T00:00:00.000Z',
  pause: null,
  pending: null,
  scheduled: null,
  cancelAt: null,
  dunning: null,
  discount: null,
};

const STATES: Record<string, SubscriptionSnapshot | null> = {
  'no subscription': null,
  active,
  'change awaiting approval': { ...active, pending: change('awaiting_approval') },
  'change scheduled': { ...active, scheduled: change('scheduled') },
  'cancel at period end': { ...active, cancelAt: active.renewsAt },
  paused: { ...active, status: 'paused', pause: { n: 1, resumeAt: '2027-01-28T00:00:00.000Z', restorePlan: 'pro' } },
  'past due': {
    ...active,
    status: 'past_due',
    dunning: {
      since: '2026-12-28T00:00:00.000Z',
      failures: 1,
      nextRetryAt: '2027-01-02T00:00:00.000Z',
      graceEndsAt: '2027-01-11T00:00:00.000Z',
      after: 'cancel',
      onFreePlan: false,
      outstanding: 19,
    },
  },
  cancelled: { ...active, status: 'cancelled' },
};

type Body = Intent extends infer I ? (I extends Intent ? Omit<I, 'by' | 'deadline' | 'requestId'> : never) : never;
const INTENTS: Record<string, Body> = {
  change: { kind: 'change', plan: 'scale' },
  'change (replace)': { kind: 'change', plan: 'scale', replace: true },
  withdraw: { kind: 'withdraw_change' },
  'cancel now': { kind: 'cancel', at: 'now' },
  'cancel at period end': { kind: 'cancel', at: 'period_end' },
  pause: { kind: 'pause', months: 1 },
  resume: { kind: 'resume' },
  'save: discount': { kind: 'accept_save', sessionId: 'cxl_1', offer: 'discount' },
  'save: downgrade': { kind: 'accept_save', sessionId: 'cxl_1', offer: 'downgrade' },
  'save: pause': { kind: 'accept_save', sessionId: 'cxl_1', offer: 'pause' },
  'save: incentive': { kind: 'accept_save', sessionId: 'cxl_1', offer: 'incentive' },
  'retry payment': { kind: 'retry_payment' },
};

/** The answer of each intent (row) in each state (column): `ok`, or the refusal's reason. */
const TABLE: Record<string, Record<string, string>> = {
  change: {
    'no subscription': 'not_subscribed',
    active: 'ok',
    'change awaiting approval': 'change_pending',
    'change scheduled': 'change_scheduled',
    'cancel at period end': 'cancel_scheduled',
    paused: 'paused',
    'past due': 'past_due',
    cancelled: 'cancelled',
  },
  'change (replace)': {
    'no subscription': 'not_subscribed',
    active: 'ok',
    'change awaiting approval': 'change_pending',
    'change scheduled': 'ok',
    'cancel at period end': 'cancel_scheduled',
    paused: 'paused',
    'past due': 'past_due',
    cancelled: 'cancelled',
  },
  withdraw: {
    'no subscription': 'not_subscribed',
    active: 'no_change',
    'change awaiting approval': 'ok',
    'change scheduled': 'ok',
    'cancel at period end': 'no_change',
    paused: 'no_change',
    'past due': 'no_change',
    cancelled: 'no_change',
  },
  'cancel now': {
    'no subscription': 'not_subscribed',
    active: 'ok',
    'change awaiting approval': 'ok',
    'change scheduled': 'ok',
    'cancel at period end': 'ok',
    paused: 'ok',
    'past due': 'ok',
    cancelled: 'cancelled',
  },
  'cancel at period end': {
    'no subscription': 'not_subscribed',
    active: 'ok',
    'change awaiting approval': 'change_pending',
    'change scheduled': 'ok',
    'cancel at period end': 'cancel_scheduled',
    paused: 'paused',
    'past due': 'past_due',
    cancelled: 'cancelled',
  },
  pause: {
    'no subscription': 'not_subscribed',
    active: 'ok',
    'change awaiting approval': 'change_pending',
    'change scheduled': 'ok',
    'cancel at period end': 'cancel_scheduled',
    paused: 'paused',
    'past due': 'past_due',
    cancelled: 'cancelled',
  },
  resume: {
    'no subscription': 'not_subscribed',
    active: 'not_paused',
    'change awaiting approval': 'not_paused',
    'change scheduled': 'not_paused',
    'cancel at period end': 'ok',
    paused: 'ok',
    'past due': 'not_paused',
    cancelled: 'not_paused',
  },
  'save: discount': {
    'no subscription': 'not_subscribed',
    active: 'ok',
    'change awaiting approval': 'change_pending',
    'change scheduled': 'change_scheduled',
    'cancel at period end': 'cancel_scheduled',
    paused: 'paused',
    'past due': 'past_due',
    cancelled: 'cancelled',
  },
  'save: downgrade': {
    'no subscription': 'not_subscribed',
    active: 'ok',
    'change awaiting approval': 'change_pending',
    'change scheduled': 'change_scheduled',
    'cancel at period end': 'cancel_scheduled',
    paused: 'paused',
    'past due': 'past_due',
    cancelled: 'cancelled',
  },
  'save: pause': {
    'no subscription': 'not_subscribed',
    active: 'ok',
    'change awaiting approval': 'change_pending',
    'change scheduled': 'ok',
    'cancel at period end': 'cancel_scheduled',
    paused: 'paused',
    'past due': 'past_due',
    cancelled: 'cancelled',
  },
  'save: incentive': {
    'no subscription': 'ok',
    active: 'ok',
    'change awaiting approval': 'ok',
    'change scheduled': 'ok',
    'cancel at period end': 'ok',
    paused: 'ok',
    'past due': 'ok',
    cancelled: 'ok',
  },
  'retry payment': {
    'no subscription': 'not_subscribed',
    active: 'not_past_due',
    'change awaiting approval': 'not_past_due',
    'change scheduled': 'not_past_due',
    'cancel at period end': 'not_past_due',
    paused: 'not_past_due',
    'past due': 'ok',
    cancelled: 'not_past_due',
  },
};

const snapshot = (sub: SubscriptionSnapshot | null): BillingSnapshot => ({
  appId: 'app_1',
  accountId: 'ada',
  account: { plan: 'pro', incentive: null },
  subscription: sub,
  clock: { offsetMs: 0, live: false },
  readAt: '2026-11-28T00:00:00.000Z',
});
const asIntent = (b: Body): Intent =>
  ({
    ...b,
    by: { kind: 'system', id: null, name: null },
    deadline: '2999-01-01T00:00:00.000Z',
    requestId: 'r',
  }) as Intent;

describe("the account actor's rules (workflows/billing-rules.ts)", () => {
  it('every intent in every state answers as the table says', () => {
    const got: Record<string, Record<string, string>> = {};
    for (const [name, body] of Object.entries(INTENTS)) {
      got[name] = {};
      for (const [state, sub] of Object.entries(STATES))
        got[name][state] = refusalOf(snapshot(sub), asIntent(body))?.reason ?? 'ok';
    }
    expect(got).to.deep.equal(TABLE);
  });

  it('docs/billing.md shows the same table', () => {
    const doc = fs.readFileSync(path.join(import.meta.dirname, '../../docs/billing.md'), 'utf8');
    const block = doc.slice(doc.indexOf('<!-- actor-rules:start -->'), doc.indexOf('<!-- actor-rules:end -->'));
    const rows = block.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('|---'));
    const [head, ...body] = rows.map((l) =>
      l
        .split('|')
        .slice(1, -1)
        .map((c) => c.trim()),
    );
    const states = head.slice(1);
    const shown = Object.fromEntries(
      body.map(([intent, ...cells]) => [
        intent,
        Object.fromEntries(cells.map((c, i) => [states[i], c === '✓' ? 'ok' : c])),
      ]),
    );
    expect(shown).to.deep.equal(TABLE);
  });

  it('a refusal names what is pending, until when, and the calls that resolve it', () => {
    const r = refusalOf(snapshot(STATES['change scheduled']), asIntent(INTENTS.change))!;
    expect(r.status).to.equal(409);
    expect(r.message).to.equal(
      'A downgrade to Lite is scheduled for 2026-12-28; withdraw it with POST ' +
        '/apps/app_1/namespaces/ada/subscription/change/withdraw, or replace it with POST ' +
        '/apps/app_1/namespaces/ada/subscription/change and "replace": true',
    );
    expect(r.pending).to.deep.equal({ kind: 'change', plan: 'lite', at: '2026-12-28T00:00:00.000Z' });
    expect(r.next!.map((n) => n.path)).to.deep.equal([
      '/apps/app_1/namespaces/ada/subscription/change/withdraw',
      '/apps/app_1/namespaces/ada/subscription/change',
    ]);
    const pending = refusalOf(snapshot(STATES['change awaiting approval']), asIntent(INTENTS.pause))!;
    expect(pending.pending).to.deep.equal({ kind: 'change', plan: 'lite', at: '2026-11-28T03:00:00.000Z' });
  });

  it('a cancel flow confirm step is accepted for an account billed elsewhere (only marked)', () => {
    expect(refusalOf(snapshot(null), asIntent({ kind: 'cancel', at: 'now', sessionId: 'cxl_1' }))).to.equal(null);
  });

  it('an intent delivered after its caller gave up is refused (503), however the state is', () => {
    const late = { ...asIntent(INTENTS.change), deadline: '2026-11-28T00:00:00.000Z' };
    expect(lateRefusal(late, Date.parse('2026-11-28T00:00:01.000Z'))).to.deep.include({
      status: 503,
      reason: 'expired_request',
    });
    expect(lateRefusal(late, Date.parse('2026-11-27T23:59:59.000Z'))).to.equal(null);
  });

  it("the actor's dates: per state, earliest first", () => {
    const kinds = (sub: SubscriptionSnapshot | null, incentiveEnds: string | null = null) =>
      timersOf({
        ...snapshot(sub),
        account: { plan: 'pro', incentive: incentiveEnds ? { id: 'promo', expiresAt: incentiveEnds } : null },
      }).map((t) => t.kind);
    expect(kinds(active)).to.deep.equal(['renewal']);
    expect(kinds(STATES['change awaiting approval'])).to.deep.equal(['approval_check', 'approval_expiry', 'renewal']);
    expect(kinds(STATES.paused)).to.deep.equal(['pause_end']);
    expect(kinds(STATES['cancel at period end'])).to.deep.equal(['period_end']);
    expect(kinds(STATES['past due'])).to.deep.equal(['renewal', 'payment_retry', 'grace_end']);
    expect(kinds(STATES.cancelled, '2026-12-01T00:00:00.000Z')).to.deep.equal(['incentive_end']);
    expect(kinds(null)).to.deep.equal([]);
  });

  it('the actor ends when nothing over time is left; its status for the Temporal UI', () => {
    expect(hasAnythingOverTime(snapshot(active))).to.equal(true);
    expect(hasAnythingOverTime(snapshot(STATES.cancelled))).to.equal(false);
    expect(hasAnythingOverTime({ ...snapshot(null), account: null })).to.equal(false);
    expect(
      hasAnythingOverTime({
        ...snapshot(null),
        account: { plan: 'pro', incentive: { id: 'p', expiresAt: '2027-01-01T00:00:00.000Z' } },
      }),
    ).to.equal(true);
    expect(billingStatusOf(snapshot(STATES['cancel at period end']))).to.equal('cancelling');
    expect(billingStatusOf(snapshot(STATES['past due']))).to.equal('past_due');
    expect(billingStatusOf(snapshot(null))).to.equal('none');
  });
});
