// The account page's billing section without React (console/src/pages/AccountBilling/words.ts): it offers exactly the
// intents the account actor's rules accept (the table in docs/billing.md, the rules' own test), says the actor's real
// refusals in words with buttons for their steps, and words who asked and what a quote charges.
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { Subscription } from '@offerkit/sdk';
import {
  appTimeText,
  offeredIntents,
  quoteRows,
  refusedOf,
  requesterText,
  stepOf,
  wordsOf,
  type Intent,
  type Quote,
} from '../../console/src/pages/AccountBilling/words.js';
import { refusalOf, type BillingSnapshot, type SubscriptionSnapshot } from '../../workflows/billing-rules.js';

const RENEWS = '2026-12-28T12:00:00.000Z';
const change = (status: 'awaiting_approval' | 'scheduled') => ({
  id: 'chg_1',
  status,
  kind: 'change' as const,
  plan: 'lite',
  interval: 'month' as const,
  price: 9,
  currency: 'USD',
  direction: 'downgrade' as const,
  discount: null,
  requested_at: '2026-11-28T00:00:00.000Z',
  effective: 'renewal' as const,
  expires_at: status === 'awaiting_approval' ? '2026-11-28T03:00:00.000Z' : null,
  scheduled_at: status === 'scheduled' ? '2026-11-28T00:05:00.000Z' : null,
  workflow_id: 'account/app_1/ada',
});
const active = {
  id: 'I-1',
  status: 'active',
  plan: 'pro',
  interval: 'month',
  price: 19,
  currency: 'USD',
  renews_at: RENEWS,
  pause: null,
  cancel_at: null,
  cancelled_at: null,
  pending_change: null,
  scheduled_change: null,
  dunning: null,
} as unknown as Subscription;

/** The API's subscription view in each state of the rules' table. */
const STATES: Record<string, Subscription | null> = {
  'no subscription': null,
  active,
  'change awaiting approval': { ...active, pending_change: change('awaiting_approval') },
  'change scheduled': { ...active, pending_change: change('scheduled'), scheduled_change: change('scheduled') },
  'cancel at period end': { ...active, cancel_at: RENEWS },
  paused: { ...active, status: 'paused' },
  'past due': { ...active, status: 'past_due' },
  cancelled: { ...active, status: 'cancelled' },
};

/** The table's rows the console asks for, and the console's intent for each. */
const ROWS: Record<string, Intent> = {
  withdraw: 'withdraw',
  'cancel now': 'cancel_now',
  'cancel at period end': 'cancel_period_end',
  pause: 'pause',
  resume: 'resume',
  'retry payment': 'retry',
};

function rulesTable(): Record<string, Record<string, string>> {
  const doc = fs.readFileSync(path.join(import.meta.dirname, '../../docs/billing.md'), 'utf8');
  const block = doc.slice(doc.indexOf('<!-- actor-rules:start -->'), doc.indexOf('<!-- actor-rules:end -->'));
  const rows = block.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('|---'));
  const [head, ...body] = rows.map((l) =>
    l
      .split('|')
      .slice(1, -1)
      .map((c) => c.trim()),
  );
  return Object.fromEntries(
    body.map(([intent, ...cells]) => [intent, Object.fromEntries(cells.map((c, i) => [head[i + 1], c]))]),
  );
}

describe("the account page's billing words", () => {
  it("offers exactly the intents the actor's rules accept in each state (docs/billing.md's table)", () => {
    const table = rulesTable();
    expect(Object.keys(table['change'])).to.deep.equal(Object.keys(STATES));
    for (const [state, sub] of Object.entries(STATES)) {
      const offered = offeredIntents(sub);
      for (const [row, intent] of Object.entries(ROWS))
        expect(offered.intents.has(intent), `${row} when ${state}`).to.equal(table[row][state] === '✓');
      // A change is offered when either form is accepted; it replaces the scheduled change when only that form is.
      const plain = table['change'][state] === '✓';
      const replacing = table['change (replace)'][state] === '✓';
      expect(offered.intents.has('change'), `change when ${state}`).to.equal(plain || replacing);
      expect(offered.replaces, `replace when ${state}`).to.equal(!plain && replacing);
      expect(offered.undoesCancel, `resume undoes a cancellation when ${state}`).to.equal(
        state === 'cancel at period end',
      );
    }
  });

  it('does not offer to withdraw the undoing of a scheduled change (it waits for the buyer too)', () => {
    const undoing = { ...change('awaiting_approval'), kind: 'withdrawal' as const };
    const sub = { ...active, pending_change: undoing, scheduled_change: change('scheduled') } as Subscription;
    expect([...offeredIntents(sub).intents]).to.deep.equal(['cancel_now']);
  });

  it('offers to withdraw a change scheduled before a pause (it waits for the first renewal after it)', () => {
    const sub = { ...active, status: 'paused', scheduled_change: change('scheduled') } as Subscription;
    expect([...offeredIntents(sub).intents].sort()).to.deep.equal(['cancel_now', 'resume', 'withdraw']);
  });

  it("says each of the actor's real refusals in words, without the API calls, and offers its steps", () => {
    const snap = (sub: Partial<SubscriptionSnapshot>): BillingSnapshot => ({
      appId: 'app_1',
      accountId: 'ada',
      account: null,
      clock: { offsetMs: 0, live: false },
      readAt: '',
      subscription: {
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
        ...sub,
      },
    });
    const lite = {
      id: 'chg_1',
      kind: 'change' as const,
      plan: 'lite',
      planName: 'Lite',
      interval: 'month' as const,
      price: 9,
      currency: 'USD',
      direction: 'downgrade' as const,
      effective: 'renewal' as const,
      requestedAt: '2026-11-28T00:00:00.000Z',
      expiresAt: null,
      scheduledAt: '2026-11-28T00:05:00.000Z',
      sessionId: null,
      replaces: null,
    };
    const ask = { by: { kind: 'person' as const, id: 'u1', name: 'olga@example.com' }, deadline: '', requestId: '' };
    const refused = (s: BillingSnapshot, intent: object) => {
      const r = refusalOf(s, { ...ask, ...intent } as Parameters<typeof refusalOf>[1])!;
      expect(r, JSON.stringify(intent)).to.not.equal(null);
      // As the API answers it: the message is the error, the rest the body.
      return refusedOf({ status: r.status, message: r.message, body: { error: r.message, ...r } });
    };

    const scheduled = refused(snap({ scheduled: { ...lite, status: 'scheduled' } }), { kind: 'change', plan: 'scale' });
    expect(scheduled).to.deep.equal({
      words: 'A downgrade to Lite is scheduled for 2026-12-28.',
      steps: ['withdraw', 'replace'],
      status: 409,
    });
    const cancelling = refused(snap({ cancelAt: '2026-12-28T00:00:00.000Z' }), { kind: 'pause', months: 1 });
    expect(cancelling.words).to.equal(
      'The subscription of account ada is cancelled at the end of its period (2026-12-28).',
    );
    expect(cancelling.steps).to.deep.equal(['undo_cancel']);
    const dunning = {
      since: '2026-12-28T00:00:00.000Z',
      failures: 1,
      nextRetryAt: '2027-01-02T00:00:00.000Z',
      graceEndsAt: '2027-01-11T00:00:00.000Z',
      after: 'cancel' as const,
      onFreePlan: false,
      outstanding: 19,
    };
    const pastDue = refused(snap({ status: 'past_due', dunning }), { kind: 'change', plan: 'scale' });
    expect(pastDue.words).to.equal('The renewal payment of account ada failed on 2026-12-28.');
    expect(pastDue.steps).to.deep.equal(['retry']);
    const waiting = refused(
      snap({ pending: { ...lite, status: 'awaiting_approval', expiresAt: '2026-11-28T03:00:00.000Z' } }),
      { kind: 'pause', months: 1 },
    );
    expect(waiting.words).to.match(
      /waiting for the buyer's approval at the provider until 2026-11-28T03:00:00.000Z\.$/,
    );
    expect(waiting.steps).to.deep.equal(['withdraw']);
    const paused = refused(
      snap({ status: 'paused', pause: { n: 1, resumeAt: '2027-01-28T00:00:00.000Z', restorePlan: 'pro' } }),
      {
        kind: 'change',
        plan: 'scale',
      },
    );
    expect(paused.words).to.equal('The subscription of account ada is paused until 2027-01-28.');
    for (const r of [scheduled, cancelling, pastDue, waiting, paused]) expect(r.words).to.not.include('POST');
  });

  it('keeps a message that names no call whole, and a 503 may be tried again (no steps)', () => {
    const unavailable =
      'Billing changes are unavailable: Temporal did not take the request within 5 s; nothing was changed, retry shortly';
    expect(wordsOf(unavailable)).to.equal(`${unavailable}.`);
    expect(refusedOf({ status: 503, message: unavailable, body: { error: unavailable } })).to.deep.include({
      status: 503,
      steps: [],
    });
    expect(refusedOf(new Error('offline')).words).to.equal('offline.');
  });

  it('knows a step by its route, and none it has no button for', () => {
    const base = '/apps/app_1/namespaces/ada/subscription';
    expect(stepOf({ path: `${base}/change/withdraw` }, 'change_pending')).to.equal('withdraw');
    expect(stepOf({ path: `${base}/change`, body: { replace: true } }, 'change_scheduled')).to.equal('replace');
    expect(stepOf({ path: `${base}/change` }, 'change_scheduled')).to.equal(null);
    expect(stepOf({ path: `${base}/resume` }, 'paused')).to.equal('resume');
    expect(stepOf({ path: `${base}/resume` }, 'cancel_scheduled')).to.equal('undo_cancel');
    expect(stepOf({ path: `${base}/retry-payment` }, 'past_due')).to.equal('retry');
    expect(stepOf({ path: '/apps/app_1/offers' }, 'x')).to.equal(null);
  });

  it('says who asked: a person, a key, a token, MCP, the provider, the actor', () => {
    expect(requesterText({ kind: 'person', id: 'u1', name: 'olga@example.com' })).to.equal('olga@example.com');
    expect(requesterText({ kind: 'secret_key', id: null, name: null })).to.equal('the secret key');
    expect(requesterText({ kind: 'account_token', id: 'ada', name: null })).to.equal('an account token (ada)');
    expect(requesterText({ kind: 'mcp', id: 'conn_1', name: null })).to.equal('MCP connection conn_1');
    expect(requesterText({ kind: 'system', id: null, name: 'provider' })).to.equal('the payment provider');
    expect(requesterText({ kind: 'system', id: null, name: 'account actor' })).to.equal("the account's actor");
    expect(requesterText({ kind: 'system', id: null, name: null })).to.equal('the service');
    expect(requesterText(null)).to.equal(null);
  });

  it("shows the app's time only when a test clock moved it away from the real time", () => {
    const at = '2026-11-28T12:00:00.000Z';
    expect(appTimeText({ at, app_time: '2026-11-28T12:00:00.500Z' })).to.equal(null);
    expect(appTimeText({ at, app_time: '2026-12-03T12:00:00.000Z' })).to.match(/^2026-12-0[234] \d\d:\d\d$/);
  });

  it('words a quote: due now, the new price, from when, the direction and policy, what it replaces', () => {
    const quote = {
      plan: { id: 'scale', name: 'Scale' },
      interval: 'month',
      currency: 'USD',
      price: 99,
      amount_due_now: 78.85,
      direction: 'upgrade',
      policy: 'prorate_now',
      effective: 'now',
      effective_at: null,
      proration: { amount: 78.85, currency: 'USD', months_left: 0.98 },
      proration_date: '2026-11-28T12:00:00.000Z',
      current: { plan: 'pro', interval: 'month', price: 19, currency: 'USD', renews_at: RENEWS },
      cancels_at_renewal: false,
      replaces: { id: 'chg_1', plan: 'lite' },
    } as Quote;
    expect(Object.fromEntries(quoteRows(quote))).to.deep.equal({
      'Due now': '78.85 USD (the difference for 1.0 months left)',
      'New price': '99.00 USD / month',
      From: 'When the customer approves it',
      Direction: 'upgrade (policy prorate now)',
      Now: 'pro / month at 19.00 USD',
      Replaces: 'The change to lite scheduled for the renewal',
    });
    const down = quoteRows({
      ...quote,
      effective: 'renewal',
      effective_at: RENEWS,
      amount_due_now: 0,
      proration: null,
    });
    expect(Object.fromEntries(down).From).to.match(/^The renewal, 2026-12-2[789]$/);
    const free = quoteRows({
      ...quote,
      plan: { id: 'free', name: 'Free' },
      cancels_at_renewal: true,
      effective_at: RENEWS,
    });
    expect(Object.fromEntries(free)['What happens']).to.match(
      /^Cancelled at the end of the period \(2026-12-2\d\), then Free$/,
    );
  });
});
