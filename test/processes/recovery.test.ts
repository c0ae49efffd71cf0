// What waited on an outage resumes when it ends (issue 39, item 8), with servers of the test's own, frozen or stopped
// for real: an activity that met a frozen PostgreSQL waits in the worker and goes on when it answers again (not a
// minute later, at Temporal's backoff cap); a checkout approved while PostgreSQL was frozen (its provider
// notification answered 503) completes once it is back, without waiting for the checkout's next scheduled check;
// and the Temporal SDK's own warnings come out in the service's JSON log format. Bounds asserted here are generous
// (a busy machine must not fail them); the figures belong to docs/failure-modes.md and `npm run chaos -- freeze`.
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { PayPalStandIn } from '../../src/dev/paypal-standin.js';
import { startTemporalDevServer, ensureTemporalCli } from '../../src/temporal/devserver.js';
import { createLogger } from '../../src/logger.js';
import { checkoutDef, checkoutWorkflowId } from '../../workflows/shared.js';
import { connectBilling, createAccount, seededApp } from '../helpers/factories.js';
import { get, post, useBase } from '../helpers/http.js';
import { startIsolatedStack, type IsolatedStack } from '../helpers/isolated.js';
import { serviceEnv, startWorker, stopped, waitForOutput } from '../helpers/processes.js';
import { startReceiver } from '../helpers/receiver.js';
import { freePort, PAYPAL_TEST_CREDENTIALS, tempDir } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('work that waited on an outage resumes when it ends (own servers)', function () {
  this.timeout(240_000);
  let stack: IsolatedStack | undefined;
  afterEach(async () => {
    useBase(undefined);
    await stack?.close();
    stack = undefined;
  });

  it('a webhook attempt that met a frozen PostgreSQL waits in the worker and is sent as soon as it answers', async () => {
    // Temporal's own backoff would wait up to 10 minutes between retries here: only the wait in the worker brings
    // the attempt back within seconds of the thaw.
    stack = await startIsolatedStack({
      ACTIVITY_RETRY_MAX_MS: '600000',
      WEBHOOK_RETRY_SCHEDULE_MS: '1000,1000,1000,1000,1000,1000',
    });
    useBase(stack.baseUrl);
    const s = stack;
    const receiver = await startReceiver((n) => ({ status: n === 0 ? 500 : 200 }));
    try {
      const { app } = await seededApp();
      expect(
        (await post(`/apps/${app.id}/webhooks`, app.api_key, { url: receiver.url, events: ['*'] })).status,
      ).to.equal(201);
      await createAccount(app, { id: 'ada' });
      await eventually(async () => {
        const [row] = await s.query<{ attempts: number }>('select attempts from webhook_deliveries where app_id = $1', [
          app.id,
        ]);
        return row?.attempts === 1 ? true : undefined;
      });
      // Attempt 2 is due a second later, against a frozen database.
      const thaw = s.freezePostgres();
      await sleep(20_000);
      expect(receiver.received, 'nothing is sent while the database is frozen').to.have.length(1);
      thaw();
      const thawedAt = Date.now();
      await receiver.waitFor(2, 60_000);
      const after = receiver.received[1].at - thawedAt;
      expect(after, 'sent within seconds of the thaw (Temporal alone: its next retry, minutes later)').to.be.below(
        15_000,
      );
      const back = s.logs.find((l) => l.msg === 'database reachable again');
      expect(back, 'the worker noticed the recovery').to.not.equal(undefined);
      expect(Number(back!.waiting), 'the attempt was waiting in the worker when the database came back').to.be.at.least(
        1,
      );
      const done = await eventually(async () => {
        const [row] = await s.query<{ attempts: number; status: string }>(
          'select attempts, status from webhook_deliveries where app_id = $1',
          [app.id],
        );
        return row?.status === 'succeeded' ? row : undefined;
      });
      expect(done.attempts, 'the wait is not a send').to.equal(2);
    } finally {
      await receiver.close();
    }
  });

  it('a checkout approved while PostgreSQL is frozen (its notification refused) completes once it is back', async () => {
    // A stand-in of its own whose redelivery would come only after 10 minutes: the completion below is the
    // service's own doing, not the provider's retry, nor the checkout's next scheduled check (a minute away).
    const paypal = new PayPalStandIn({
      credentials: PAYPAL_TEST_CREDENTIALS,
      activationDelayMs: 300,
      notificationRetry: { firstMs: 600_000 },
    });
    try {
      stack = await startIsolatedStack({ PAYPAL_BASE_URL: await paypal.start() });
      useBase(stack.baseUrl);
      const s = stack;
      const { app, base } = await seededApp();
      await connectBilling(app);
      await post(`${base}/offers`, app.api_key, {
        id: 'launch',
        name: 'Launch',
        plans: [{ plan: 'pro', prices: [{ interval: 'month', amount: 19 }] }],
      });
      expect((await post(`${base}/offers/launch/publish`, app.api_key)).status).to.equal(200);
      const chk = (
        await post(`${base}/offers/launch/checkout`, app.public_key, { plan: 'pro', interval: 'month', account: 'ada' })
      ).body;
      // The checkout's scheduled checks come at 0, 2, 7 and 22 s, then a minute later: wait for the fourth.
      const handle = s.deps.temporal.client.workflow.getHandle(checkoutWorkflowId(chk.id));
      await eventually(
        async () => ((await handle.query(checkoutDef.queries.state)).checks >= 4 ? true : undefined),
        60_000,
      );
      const thaw = s.freezePostgres();
      let thawedAt = 0;
      try {
        await paypal.approve(chk.approve_url);
        const refused = await eventually(
          async () => paypal.sent.find((n) => n.url.endsWith(`/payments/webhooks/${app.id}`)),
          30_000,
        );
        expect(refused.status, 'the notification met the frozen database').to.equal(503);
      } finally {
        thaw();
        thawedAt = Date.now();
      }
      const done = await eventually(async () => {
        const r = await get(`${base}/checkouts/${chk.id}`, app.api_key);
        return r.body.status === 'completed' ? r.body : undefined;
      }, 60_000);
      expect(Date.now() - thawedAt, 'completed within seconds of the recovery').to.be.below(30_000);
      expect(done.account).to.equal('ada');
      const recheck = s.logs.find(
        (l) => l.msg === 'database back: checkouts and plan changes awaiting the provider check it again',
      );
      expect(Number(recheck?.checkouts), 'the open checkout was asked to check again').to.be.at.least(1);
      expect(paypal.sent.filter((n) => n.url.endsWith(`/payments/webhooks/${app.id}`))).to.have.length(1);
      const events = (await get(`${base}/events?type=checkout.completed`, app.api_key)).body.data;
      expect(events, 'applied exactly once').to.have.length(1);
    } finally {
      await paypal.stop();
    }
  });
});

describe("the Temporal SDK's own warnings, in the service's log format", function () {
  this.timeout(120_000);

  it("a worker whose Temporal went away logs the SDK's gRPC retries as JSON records of its own logger", async () => {
    const quiet = createLogger('silent');
    const dir = tempDir('offerkit-sdk-log-');
    const temporal = await startTemporalDevServer({
      cli: ensureTemporalCli(process.env.TEMPORAL_CLI, quiet),
      port: await freePort(),
      uiPort: null,
      namespace: 'default',
      logger: quiet,
    });
    const env = serviceEnv(await freePort(), {
      ADMIN_API_KEY: 'adm_sdk_log',
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_TASK_QUEUE: `offerkit-sdk-log-${process.pid}`,
      LOG_FORMAT: 'json',
    });
    const worker = startWorker(env);
    try {
      await waitForOutput(worker, 'worker running', 60_000);
      await temporal.stop();
      // The SDK core retries its polls and says so at WARN (`gRPC call poll_... retried 6 times`).
      await waitForOutput(worker, 'retried', 60_000);
      const lines = worker
        .output()
        .split('\n')
        .filter((l) => l.trim());
      const notJson = lines.filter((l) => {
        try {
          JSON.parse(l);
          return false;
        } catch {
          return true;
        }
      });
      expect(notJson, 'every line is a JSON record').to.deep.equal([]);
      const retry = lines
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .find((r) => /retried/.test(String(r.msg)));
      expect(retry).to.deep.include({ level: 40, component: 'temporal-sdk' });
      expect(String(retry!.target)).to.match(/^temporalio_client/);
    } finally {
      await stopped(worker.child);
      await temporal.stop().catch(() => undefined);
      fs.rmSync(path.join(dir), { recursive: true, force: true });
    }
  });
});
