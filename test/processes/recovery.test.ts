// What waited on a PostgreSQL outage resumes when it ends (issue 39, item 8), on servers of the test's own with
// PostgreSQL frozen for real (SIGSTOP of the server and its backends), once for everything below so the file stays
// short: a webhook attempt due during the freeze waits in the worker for the database and is sent when it answers
// (Temporal's own backoff is set to 10 minutes here, so only the wait brings it back); a checkout and a plan change
// approved at the provider during the freeze (the checkout's notification answered 503, the stand-in's redelivery
// 10 minutes away) complete because the service, noticing its recovery, asks their workflows to check again. No
// wall-clock bounds: what is asserted is who woke the work (the outage watch's waiters, the workflows' signals and
// timers); the figures belong to docs/failure-modes.md and `npm run chaos -- freeze`.
import { expect } from 'chai';
import type { WorkflowHandle } from '@temporalio/client';
import { PayPalStandIn } from '../../src/dev/paypal-standin.js';
import { accountDef, accountWorkflowId, checkoutDef, checkoutWorkflowId } from '../../workflows/shared.js';
import { connectBilling, createAccount, seededApp } from '../helpers/factories.js';
import { get, post, useBase } from '../helpers/http.js';
import { startIsolatedStack, type IsolatedStack } from '../helpers/isolated.js';
import { startReceiver } from '../helpers/receiver.js';
import { PAYPAL_TEST_CREDENTIALS } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

type HistoryEvent = NonNullable<Awaited<ReturnType<WorkflowHandle['fetchHistory']>>['events']>[number];

describe('work that waited on a PostgreSQL outage resumes when it ends (own servers, one freeze)', function () {
  this.timeout(240_000);
  let stack: IsolatedStack | undefined;
  after(async () => {
    useBase(undefined);
    await stack?.close();
  });

  it('a webhook attempt waits in the worker; a checkout and a plan change approved meanwhile are checked again', async () => {
    // The stand-in redelivers a refused notification only after 10 minutes: what completes the purchase below is the
    // service's own recheck, not PayPal's retry.
    const paypal = new PayPalStandIn({
      credentials: PAYPAL_TEST_CREDENTIALS,
      activationDelayMs: 300,
      notificationRetry: { firstMs: 600_000 },
    });
    const receiver = await startReceiver((n) => ({ status: n === 0 ? 500 : 200 }));
    try {
      stack = await startIsolatedStack({
        PAYPAL_BASE_URL: await paypal.start(),
        ACTIVITY_RETRY_MAX_MS: '600000',
        WEBHOOK_RETRY_SCHEDULE_MS: '1000,1000,1000,1000,1000,1000',
      });
      useBase(stack.baseUrl);
      const s = stack;
      const { app, base } = await seededApp();
      await connectBilling(app, paypal);
      await post(`${base}/offers`, app.api_key, {
        id: 'launch',
        name: 'Launch',
        plans: [{ plan: 'pro', prices: [{ interval: 'month', amount: 19 }] }],
      });
      expect((await post(`${base}/offers/launch/publish`, app.api_key)).status).to.equal(200);
      const checkout = async (account: string) =>
        (await post(`${base}/offers/launch/checkout`, app.public_key, { plan: 'pro', interval: 'month', account }))
          .body as { id: string; approve_url: string };

      // cy's checkout waits for its buyer; bob buys Pro meanwhile (he will change plans during the freeze).
      const chk = await checkout('cy');
      const bobs = await checkout('bob');
      await paypal.approve(bobs.approve_url);
      await eventually(
        async () => (await post(`${base}/checkouts/${bobs.id}/complete`, app.public_key)).body.status === 'completed',
      );
      // The checkout's scheduled checks come 2, 5 and 15 s apart, then a minute: after the fourth the next is a
      // minute away, so a completion sooner is the recheck's.
      const handle = s.deps.temporal.client.workflow.getHandle(checkoutWorkflowId(chk.id));
      await eventually(
        async () => ((await handle.query(checkoutDef.queries.state)).checks >= 4 ? true : undefined),
        60_000,
      );
      // bob's change to Scale waits for his approval; its first scheduled check is 30 s away.
      const change = await post(`${base}/namespaces/bob/subscription/change`, app.api_key, {
        plan: 'scale',
        interval: 'month',
        return_url: 'https://shop.example/account',
      });
      expect(change.status, change.text).to.equal(200);
      // The change is the account actor's (issue 40): its workflow is the account's.
      const changeWorkflowId = (await get(`${base}/namespaces/bob/subscription`, app.api_key)).body.pending_change
        .workflow_id as string;
      expect(changeWorkflowId).to.equal(accountWorkflowId(app.id, 'bob'));
      // A webhook endpoint whose first attempt fails: attempt 2 is due a second later, against the frozen database.
      const hook = await post(`${base}/webhooks`, app.api_key, { url: receiver.url, events: ['account.created'] });
      expect(hook.status, hook.text).to.equal(201);
      await createAccount(app, { id: 'ada' });
      await receiver.waitFor(1, 20_000);

      const sentBefore = paypal.sent.length;
      const thaw = s.freezePostgres();
      try {
        await paypal.approve(chk.approve_url);
        let next = await paypal.approve(change.body.approve_url as string);
        while (next.includes('/checkoutnow')) next = await paypal.approve(next);
        const refused = await eventually(
          async () => paypal.sent.slice(sentBefore).find((n) => n.url.endsWith(`/payments/webhooks/${app.id}`)),
          30_000,
        );
        expect(refused.status, 'the notification met the frozen database').to.equal(503);
        // The webhook's second attempt met the frozen database and waits in the worker for it.
        await eventually(async () => (s.deps.dbOutage.waiting >= 1 ? true : undefined), 30_000);
        expect(receiver.received, 'nothing is sent while the database is frozen').to.have.length(1);
      } finally {
        thaw();
      }

      // The webhook to ada: sent by the attempt that waited (Temporal's next retry would be minutes away). cy's
      // account.created (made as her checkout completes) is a delivery of its own.
      const delivery = await eventually(async () => {
        const [row] = await s.query<{ attempts: number; status: string }>(
          `select attempts, status from webhook_deliveries
            where app_id = $1 and event_type = 'account.created' and payload::text like '%"ada"%'`,
          [app.id],
        );
        return row?.status === 'succeeded' ? row : undefined;
      }, 60_000);
      const back = s.logs.filter((l) => l.msg === 'database reachable again');
      expect(
        back.some((l) => Number(l.waiting) >= 1),
        'an activity was waiting in the worker when the database came back',
      ).to.equal(true);
      expect(delivery.attempts, 'the wait is not a send').to.equal(2);

      // The checkout and the plan change: asked to check again by the recovery, before their next scheduled checks.
      const done = await eventually(async () => {
        const r = await get(`${base}/checkouts/${chk.id}`, app.api_key);
        return r.body.status === 'completed' ? r.body : undefined;
      }, 60_000);
      expect(done.account).to.equal('cy');
      await eventually(
        async () => (await get(`${base}/namespaces/bob`, app.api_key)).body.plan === 'scale' || undefined,
        60_000,
      );
      const recheck = s.logs.find(
        (l) => l.msg === 'database back: checkouts and plan changes awaiting the provider check it again',
      );
      expect(Number(recheck?.checkouts), 'the open checkout was asked to check again').to.be.at.least(1);
      expect(Number(recheck?.planChanges), 'the plan change awaiting approval too').to.be.at.least(1);
      const history = async (workflowId: string) =>
        ((await s.deps.temporal.client.workflow.getHandle(workflowId).fetchHistory()).events ?? []) as HistoryEvent[];
      const signals = (events: HistoryEvent[], name: string) =>
        events.filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === name).length;
      const fired = (events: HistoryEvent[]) => events.filter((e) => e.timerFiredEventAttributes).length;
      const chkEvents = await history(checkoutWorkflowId(chk.id));
      expect(
        signals(chkEvents, checkoutDef.signals.providerNotified.name),
        'the recheck signalled the checkout',
      ).to.equal(1);
      expect(fired(chkEvents), "the checks' timers of 2, 5 and 15 s fired; the minute's did not").to.equal(3);
      const changeEvents = await history(changeWorkflowId);
      const recovered = changeEvents.filter((e) => {
        const a = e.workflowExecutionSignaledEventAttributes;
        if (a?.signalName !== accountDef.signals.fact.name) return false;
        const data = a.input?.payloads?.[0]?.data;
        return !!data && JSON.parse(Buffer.from(data).toString()).eventType === 'DATABASE.RECOVERED';
      });
      expect(recovered, "and the plan change's actor").to.have.length(1);
      expect(fired(changeEvents), 'before its first scheduled check (30 s)').to.equal(0);

      // Nothing twice: one notification (refused, its redelivery still 10 minutes away), one completion.
      expect(paypal.sent.filter((n) => n.attempt > 1)).to.have.length(0);
      const events = (await get(`${base}/events?type=checkout.completed`, app.api_key)).body.data as unknown[];
      expect(events, 'applied exactly once').to.have.length(2); // bob's purchase and cy's
    } finally {
      await receiver.close();
      await paypal.stop();
    }
  });
});
