// A cancel session's claim left behind by an account actor's step that was killed between the provider call and its
// commit (found by `npm run chaos -- billing`: the retried step met its own claim, was answered 409 "being changed by
// another call", which the actor does not retry, and the account stayed active here while SUSPENDED at PayPal). The
// claim is owned by the intent's request id: the retry of that request takes it over and completes the save (or the
// cancellation) once; any other call still gets the 409. Left behind here as the killed step leaves it (its intent
// line, its claim, the provider already changed), so the retry path runs deterministically, without chaos.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { sql } from '../../src/db/sql.js';
import { takeIntent } from '../../src/subscriptions/intent-claims.js';
import { accountWorkflowId } from '../../workflows/shared.js';
import { billingApp, type TestApp } from '../helpers/factories.js';
import { call, get, post } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';

const steps = [
  {
    id: 'reason',
    type: 'question',
    title: 'Why are you leaving?',
    answers: [
      { id: 'not_using', label: 'Not using it', next: 'pause_offer' },
      { id: 'other', label: 'Something else', next: 'confirm' },
    ],
  },
  {
    id: 'pause_offer',
    type: 'offer',
    title: 'Take a break',
    decline_label: 'No thanks',
    next: 'confirm',
    offers: [{ kind: 'pause', months: 1 }],
  },
  { id: 'confirm', type: 'confirm', title: 'Confirm cancellation', decline_label: null },
];

describe("a cancel session's claim left by a killed actor step: the retry of the same request takes it over", function () {
  this.timeout(90_000);
  let app: TestApp;
  let base: string;
  let subId: string;

  beforeEach(async () => {
    // Ada on Pro at $19/month through the PayPal stand-in.
    ({ app, base } = await billingApp({ accounts: [{ id: 'ada', plan: 'free' }], purchases: ['ada'] }));
    const flow = await post(`${base}/cancel-flows`, app.api_key, { status: 'active', steps });
    expect(flow.status, flow.text).to.equal(201);
    subId = (await get(`${base}/namespaces/ada/subscription`, app.api_key)).body.id;
  });

  const db = () => testEnv().deps.orm.em.fork();
  const events = async (type: string) =>
    (await get(`${base}/events?type=${type}&limit=100`, app.api_key)).body.data as { data: any }[];
  const act = (sessionId: string, action: 'accept' | 'cancel', requestId: string) =>
    call('POST', `${base}/cancel-sessions/${sessionId}/${action}`, {
      token: app.api_key,
      body: {},
      headers: { 'X-Request-Id': requestId },
    });
  const claimOf = async (sessionId: string) =>
    (
      await sql<{ claimed: boolean; claimed_by: string | null; status: string }>(
        db(),
        'select claimed_until > now() as claimed, claimed_by, status from cancel_sessions where id = $1',
        [sessionId],
      )
    )[0];
  const linesOf = (requestId: string) =>
    sql<{ kind: string; type: string }>(
      db(),
      `select kind, type from account_timeline where app_id = $1 and data->>'request_id' = $2 order by id`,
      [app.id, requestId],
    );

  /** A session walked to `step`, then what a step killed after its provider call leaves: its intent line and claim. */
  async function leftByKilledStep(answer: 'not_using' | 'other', kind: 'accept_save' | 'cancel') {
    const s = (await post(`${base}/cancel-sessions`, app.api_key, { account: 'ada' })).body;
    const at = await post(`${base}/cancel-sessions/${s.id}/answer`, app.api_key, { step: 'reason', answer });
    expect(at.status, at.text).to.equal(200);
    if (answer === 'other') expect(at.body.step.type).to.equal('confirm');
    else expect(at.body.offer).to.deep.include({ kind: 'pause' });
    const requestId = randomUUID();
    await takeIntent(db(), {
      appId: app.id,
      accountId: 'ada',
      requestId,
      type: kind,
      summary: 'The intent of the step that was killed',
      by: { kind: 'secret_key', id: null, name: null },
      workflowId: accountWorkflowId(app.id, 'ada'),
    });
    await sql(
      db(),
      `update cancel_sessions set claimed_until = now() + interval '2 minutes', claimed_by = $2 where id = $1`,
      [s.id, requestId],
    );
    return { sessionId: s.id as string, requestId };
  }

  it('a pause save offer suspended at PayPal before the kill: the retry pauses here, once; another call gets the 409', async () => {
    const paypal = testEnv().paypal;
    const { sessionId, requestId } = await leftByKilledStep('not_using', 'accept_save');
    // The killed attempt's suspend reached PayPal; its answer and our commit were lost.
    paypal.subscription(subId)!.status = 'SUSPENDED';
    const captures = paypal.captures(subId).length;
    const suspendsBefore = paypal.received.filter((r) => r.path.endsWith(`${subId}/suspend`)).length;

    const other = await act(sessionId, 'accept', randomUUID());
    expect(other.status, other.text).to.equal(409);
    expect(other.body.error).to.match(/being changed by another call/);
    expect(await claimOf(sessionId)).to.deep.equal({ claimed: true, claimed_by: requestId, status: 'open' });
    expect((await get(`${base}/namespaces/ada/subscription`, app.api_key)).body.status).to.equal('active');

    const retried = await act(sessionId, 'accept', requestId);
    expect(retried.status, retried.text).to.equal(200);
    expect(retried.body.status).to.equal('saved');
    expect(retried.body.result).to.include({ outcome: 'pause', months: 1, restore_plan: 'pro' });

    const sub = (await get(`${base}/namespaces/ada/subscription`, app.api_key)).body;
    expect(sub.status).to.equal('paused');
    expect(paypal.subscription(subId)!.status).to.equal('SUSPENDED');
    // The retry asked PayPal again (answered 422 SUBSCRIPTION_STATUS_INVALID, read back as SUSPENDED: done).
    expect(paypal.received.filter((r) => r.path.endsWith(`${subId}/suspend`))).to.have.length(suspendsBefore + 1);
    expect(paypal.captures(subId), 'nothing charged').to.have.length(captures);
    expect(await events('subscription.paused')).to.have.length(1);
    expect(await events('cancel_flow.saved')).to.have.length(1);
    const stats = (await get(`${base}/cancel-flows/default/stats?days=7`, app.api_key)).body;
    expect(stats).to.deep.include({ saved: 1, cancelled: 0, open: 0 });
    expect(await claimOf(sessionId)).to.deep.equal({ claimed: null, claimed_by: null, status: 'saved' });
    expect((await linesOf(requestId)).map((l) => `${l.kind}:${l.type}`)).to.deep.equal([
      'intent:accept_save',
      'outcome:account.plan_changed',
      'outcome:subscription.paused',
      'outcome:cancel_flow.saved',
    ]);
  });

  it('a confirm step cancelled at PayPal before the kill: the retry cancels here, once; another call gets the 409', async () => {
    const paypal = testEnv().paypal;
    const { sessionId, requestId } = await leftByKilledStep('other', 'cancel');
    paypal.subscription(subId)!.status = 'CANCELLED';
    const captures = paypal.captures(subId).length;

    const other = await act(sessionId, 'cancel', randomUUID());
    expect(other.status, other.text).to.equal(409);
    expect(other.body.error).to.match(/being changed by another call/);
    expect(await claimOf(sessionId)).to.deep.equal({ claimed: true, claimed_by: requestId, status: 'open' });

    const retried = await act(sessionId, 'cancel', requestId);
    expect(retried.status, retried.text).to.equal(200);
    expect(retried.body.status).to.equal('cancelled');
    expect(retried.body.result).to.include({ outcome: 'cancelled', billing: 'provider', plan: 'free' });

    expect((await get(`${base}/namespaces/ada/subscription`, app.api_key)).body.status).to.equal('cancelled');
    expect(paypal.captures(subId), 'nothing charged').to.have.length(captures);
    expect(await events('subscription.cancelled')).to.have.length(1);
    expect(await events('cancel_flow.cancelled')).to.have.length(1);
    expect(await claimOf(sessionId)).to.deep.equal({ claimed: null, claimed_by: null, status: 'cancelled' });
    expect((await linesOf(requestId)).map((l) => `${l.kind}:${l.type}`)).to.deep.equal([
      'intent:cancel',
      'outcome:account.plan_changed',
      'outcome:subscription.cancelled',
      'outcome:cancel_flow.cancelled',
    ]);
  });
});
