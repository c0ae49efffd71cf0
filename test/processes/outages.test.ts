// Outages of our own infrastructure, for real: the file runs a PostgreSQL and a Temporal dev server of its own, and
// each test a stack on them (its settings, pool, worker with the outbox relay, API, log lines) that stops and restarts
// those servers. The servers are shared (an initdb and a dev server start cost more CPU than most of these tests' own
// work); each test works in apps of its own and waits for what an earlier test left in the outbox before it counts.
// Timings are shortened through settings (ACTIVITY_RETRY_MAX_MS, schedules); nothing here asserts wall-clock speed.
import { expect } from 'chai';
import { routes } from '../../src/routes.js';
import {
  accountWorkflowId,
  checkoutWorkflowId,
  RECONCILE_SCHEDULE_ID,
  reservationExpiryWorkflowId,
  type ReconcileResult,
} from '../../workflows/shared.js';
import { connectBilling, createAccount, createTestApp, purchase, seededApp } from '../helpers/factories.js';
import { call, get, post, useBase } from '../helpers/http.js';
import {
  startIsolatedServers,
  startIsolatedStack,
  type IsolatedServers,
  type IsolatedStack,
} from '../helpers/isolated.js';
import { startReceiver } from '../helpers/receiver.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('outages of PostgreSQL and Temporal (own servers, stopped and restarted for real)', function () {
  this.timeout(180_000);
  let servers: IsolatedServers;
  let stack: IsolatedStack | undefined;
  before(async () => {
    servers = await startIsolatedServers();
  });
  after(async () => {
    await servers?.stop();
  });
  const start = async (env: Record<string, string> = {}) => {
    stack = await startIsolatedStack(env, { servers });
    useBase(stack.baseUrl);
    return stack;
  };
  afterEach(async function () {
    useBase(undefined);
    if (this.currentTest?.state === 'failed' && stack && process.env.OUTAGE_LOGS)
      (await import('node:fs')).writeFileSync(
        process.env.OUTAGE_LOGS,
        stack.logs.map((l) => JSON.stringify(l)).join('\n'),
      );
    await stack?.close();
    stack = undefined;
  });

  describe('PostgreSQL down longer than any retry budget', () => {
    it('a delivery keeps retrying its attempt (our database errors are not sends) and is delivered once', async () => {
      // Attempt 2 comes 2 s after attempt 1; PostgreSQL is down from before it until 8 s later. The
      // activity retries every 200 ms meanwhile: far more than the 10 attempts that used to fail it.
      const s = await start({ WEBHOOK_RETRY_SCHEDULE_MS: '2000,2000,2000,2000,2000,2000' });
      const receiver = await startReceiver((n) => ({ status: n === 0 ? 500 : 200, body: 'ok' }));
      try {
        const { app } = await seededApp();
        expect(
          (await post(`/apps/${app.id}/webhooks`, app.api_key, { url: receiver.url, events: ['*'] })).status,
        ).to.equal(201);
        await createAccount(app, { id: 'ada' });
        const d = await eventually(async () => {
          const rows = await s.query<{ id: string; attempts: number; status: string }>(
            `select id, attempts, status from webhook_deliveries where app_id = $1`,
            [app.id],
          );
          return rows.length === 1 && rows[0].attempts === 1 ? rows[0] : undefined;
        });
        expect(d.status).to.equal('pending');
        await s.stopPostgres();
        await sleep(8_000);
        expect(receiver.received, 'nothing is sent while the database is down').to.have.length(1);
        await s.startPostgres();
        const done = await eventually(async () => {
          const [row] = await s.query<{ attempts: number; status: string }>(
            'select attempts, status from webhook_deliveries where id = $1',
            [d.id],
          );
          return row?.status === 'succeeded' ? row : undefined;
        }, 30_000);
        expect(done.attempts, 'attempts count sends to the receiver').to.equal(2);
        expect(receiver.received).to.have.length(2);
        const ids = new Set(receiver.received.map((r) => r.headers['webhook-id']));
        expect(ids.size, 'the same webhook-id on both attempts').to.equal(1);
        // The row is settled by the attempt's activity; the workflow ends a workflow task later (under load, a
        // moment after the row), so wait for its end before reading its status.
        const handle = s.deps.temporal.client.workflow.getHandle(d.id);
        await handle.result();
        expect((await handle.describe()).status.name).to.equal('COMPLETED');
      } finally {
        await receiver.close();
      }
    });

    it('a checkout approved at the provider while PostgreSQL is down is applied once when it is back', async () => {
      await start();
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
      expect(chk.status).to.equal('created');
      await stack!.stopPostgres();
      await testEnv().paypal.approve(chk.approve_url);
      await sleep(8_000); // the workflow's checks fail on the database, again and again
      const during = await get(`${base}/checkouts/${chk.id}`, app.api_key);
      expect(during.status).to.equal(503);
      await stack!.startPostgres();
      const done = await eventually(async () => {
        const r = await get(`${base}/checkouts/${chk.id}`, app.api_key);
        return r.body.status === 'completed' ? r.body : undefined;
      }, 60_000);
      expect(done.completed_at).to.be.a('string');
      const result = await stack!.deps.temporal.client.workflow.getHandle(checkoutWorkflowId(chk.id)).result();
      expect(result).to.deep.include({ status: 'completed' });
      const events = (await get(`${base}/events?type=checkout.completed`, app.api_key)).body.data;
      expect(events, 'applied exactly once').to.have.length(1);
      const account = (await get(`${base}/namespaces/ada`, app.api_key)).body;
      expect(account.plan).to.equal('pro');
    });
  });

  describe('PostgreSQL down: the API', () => {
    it('answers 503 with Retry-After on every route that needs the database (never 500), logs one line, recovers', async () => {
      const s = await start();
      const app = await createTestApp();
      await s.stopPostgres();
      const statuses: Record<string, number> = {};
      for (const r of routes) {
        const path = r.path.replace(/:([A-Za-z]+)/g, (_, name: string) => (name === 'appId' ? app.id : 'x'));
        const token = r.auth.includes('A') ? s.config.ADMIN_API_KEY! : app.api_key;
        const res = await call(r.method, path, {
          token,
          ...(['POST', 'PUT', 'PATCH'].includes(r.method) ? { body: {} } : {}),
        });
        statuses[`${r.method} ${r.path}`] = res.status;
        expect(res.status, `${r.method} ${r.path}: ${res.text}`).to.not.equal(500);
        if (res.status === 503) {
          expect(res.headers.get('retry-after'), `${r.method} ${r.path}`).to.match(/^\d+$/);
          expect(res.body.error ?? res.body.ok, `${r.method} ${r.path}`).to.not.equal(undefined);
        }
      }
      const unavailable = Object.values(statuses).filter((x) => x === 503).length;
      expect(unavailable, JSON.stringify(statuses)).to.be.greaterThan(routes.length / 2);
      const outageLines = s.logs.filter(
        (l) => l.msg === 'database unreachable: requests answer 503 and workflow activities wait until it is back',
      );
      expect(outageLines, 'one line per outage, not one per request').to.have.length(1);
      expect(s.logs.filter((l) => l.msg === 'unhandled error')).to.have.length(0);

      await s.startPostgres();
      await eventually(async () => (await get(`/apps/${app.id}`, app.api_key)).status === 200, 30_000);
      await eventually(async () => s.logs.some((l) => l.msg === 'database reachable again'));
      const health = await get('/health');
      expect(health.body).to.deep.include({ ok: true, database: 'ok' });
    });
  });

  describe('PostgreSQL stopped under load', () => {
    it('connections that die mid-transaction go back to the pool: every write answers once it is back', async () => {
      const s = await start({ DB_POOL_MAX: '4' });
      const { app } = await seededApp();
      const write = (id: string) =>
        fetch(`${s.baseUrl}/apps/${app.id}/namespaces`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${app.api_key}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ id }),
          signal: AbortSignal.timeout(15_000),
        }).then(
          async (r) => ({ status: r.status, text: await r.text() }),
          () => ({ status: 0, text: 'no answer within 15 s' }),
        );
      // Eight writers on a pool of four: transactions are in flight when PostgreSQL stops.
      let running = true;
      const statuses: number[] = [];
      // A writer refused (503 while PostgreSQL is down) waits 100 ms before its next write, as a client told to retry
      // would, rather than spinning on refusals, which proves nothing more.
      const writers = Array.from({ length: 8 }, async (_, lane) => {
        for (let i = 0; running; i++) {
          const { status } = await write(`w${lane}-${i}`);
          statuses.push(status);
          if (status !== 201) await sleep(100);
        }
      });
      await sleep(1500);
      await s.stopPostgres();
      await sleep(1500);
      await s.startPostgres();
      await sleep(1500);
      running = false;
      await Promise.all(writers);
      expect(statuses.filter((x) => x === 201).length, 'writes before and after the outage').to.be.greaterThan(8);
      expect(statuses, 'never a 500').to.not.include(500);
      expect(statuses.filter((x) => x === 503).length, 'refused during the outage').to.be.greaterThan(0);
      // Afterwards: every write answers at once, and no connection is left checked out.
      for (let i = 0; i < 12; i++) {
        const r = await write(`after-${i}`);
        expect(r.status, `write ${i} after the restart: ${r.text}`).to.equal(201);
      }
      const pool = (await s.deps.orm.em.getConnection().getNativeClient()) as unknown as {
        totalCount: number;
        idleCount: number;
        waitingCount: number;
      };
      expect(pool.waitingCount).to.equal(0);
      // Each write's answer can come before its after-commit work (the event's fan-out and workflow start) has
      // given its connection back; a connection lost to the outage never comes back.
      await eventually(async () => pool.idleCount === pool.totalCount, 5_000).catch(() => undefined);
      expect(pool.idleCount, 'every connection back in the pool').to.equal(pool.totalCount);
    });
  });

  describe('Temporal down', () => {
    it(
      'writes commit and answer without waiting for it or holding a connection; reads are unaffected; ' +
        'the backlog drains once it is back',
      async () => {
        const s = await start({ DB_POOL_MAX: '4' });
        const receiver = await startReceiver();
        try {
          const { app } = await seededApp();
          await post(`/apps/${app.id}/webhooks`, app.api_key, { url: receiver.url, events: ['account.created'] });
          // The outbox is the servers' (earlier tests' rows included): empty before the outage, so that it then
          // holds these 40 writes' commands alone.
          await eventually(async () => ((await s.query('select 1 from outbox')).length === 0 ? true : undefined));
          await s.stopTemporal();
          // 40 writes that each emit an event (so a delivery workflow start), all at once, on a pool of 4.
          const started = Date.now();
          const writes = await Promise.all(
            Array.from({ length: 40 }, (_, i) => post(`/apps/${app.id}/namespaces`, app.api_key, { id: `acc${i}` })),
          );
          const writeMs = Date.now() - started;
          for (const w of writes) expect(w.status, w.text).to.equal(201);
          const read = await get(`/apps/${app.id}/namespaces/acc0/plan`, app.api_key);
          expect(read.status).to.equal(200);
          // Every start still waits in the outbox, and no transaction is left open waiting on Temporal.
          const [{ n }] = await s.query<{ n: string }>('select count(*) as n from outbox');
          expect(Number(n)).to.equal(40);
          const open = await s.query(
            `select pid from pg_stat_activity where datname = current_database() and state like 'idle in transaction%'`,
          );
          expect(open, 'no connection held open while Temporal is down').to.have.length(0);
          const downLine = 'Temporal is unreachable; workflow commands wait in the outbox until it answers';
          await eventually(async () => s.logs.some((l) => l.msg === downLine));
          await s.deps.outbox.idle();
          expect(
            s.logs.filter((l) => l.msg === downLine),
            'one line per outage',
          ).to.have.length(1);
          expect(s.logs.filter((l) => l.msg === 'outbox command failed; will retry')).to.have.length(0);

          await s.startTemporal();
          const back = Date.now();
          await eventually(async () => {
            const [{ n: left }] = await s.query<{ n: string }>('select count(*) as n from outbox');
            return Number(left) === 0;
          }, 60_000);
          const drainMs = Date.now() - back;
          await receiver.waitFor(40, 60_000);
          await sleep(500);
          const ids = receiver.received.map((r) => r.headers['webhook-id']);
          expect(new Set(ids).size, 'each event once').to.equal(40);
          expect(ids).to.have.length(40);
          process.stdout.write(
            `      (40 writes during the outage answered in ${writeMs} ms in all; ` +
              `backlog of 40 drained ${drainMs} ms after Temporal was back)\n`,
          );
        } finally {
          await receiver.close();
        }
      },
    );
  });

  describe('Temporal down: billing intents', () => {
    it('answer 503 with Retry-After within 5 s and change nothing; taken again once Temporal is back', async () => {
      const s = await start();
      const { app, base } = await seededApp({ accounts: [{ id: 'ada', plan: 'free' }] });
      await purchase(app, 'ada');
      const subId = (await get(`${base}/namespaces/ada/subscription`, app.api_key)).body.id;
      await eventually(async () => ((await s.query('select 1 from outbox')).length === 0 ? true : undefined));
      await s.stopTemporal();
      const started = Date.now();
      const res = await post(`${base}/namespaces/ada/subscription/pause`, app.api_key, { months: 1 });
      const tookMs = Date.now() - started;
      expect(res.status, res.text).to.equal(503);
      expect(res.headers.get('retry-after')).to.equal('5');
      expect(res.body.error).to.match(/nothing was changed/);
      const [row] = await s.query<{ status: string }>('select status from subscriptions where app_id = $1', [app.id]);
      expect(row.status, 'nothing changed').to.equal('active');
      expect(testEnv().paypal.subscription(subId)!.status).to.equal('ACTIVE');
      // Reads do not need Temporal.
      expect((await get(`${base}/namespaces/ada/subscription`, app.api_key)).status).to.equal(200);
      await s.startTemporal();
      const again = await eventually(async () => {
        const r = await post(`${base}/namespaces/ada/subscription/pause`, app.api_key, { months: 1 });
        return r.status === 200 ? r : undefined;
      }, 60_000);
      expect(again.body.status).to.equal('paused');
      const events = (await get(`${base}/events?type=subscription.paused`, app.api_key)).body.data;
      expect(events, 'paused once').to.have.length(1);
      process.stdout.write(`      (the refused intent answered in ${tookMs} ms)\n`);
    });
  });

  describe('the reconciler Schedule', () => {
    /** Triggers the real Schedule and answers its run's result. */
    async function runReconciler(s: IsolatedStack): Promise<ReconcileResult> {
      const h = s.deps.temporal.client.schedule.getHandle(RECONCILE_SCHEDULE_ID);
      const before = (await h.describe()).info.recentActions.length;
      await h.trigger();
      const action = await eventually(async () => {
        const d = await h.describe();
        return d.info.recentActions.length > before ? d.info.recentActions.at(-1) : undefined;
      });
      const wf = action.action.workflow;
      return (await s.deps.temporal.client.workflow
        .getHandle(wf.workflowId, wf.firstExecutionRunId)
        .result()) as ReconcileResult;
    }
    const terminated = async (s: IsolatedStack, workflowId: string) => {
      const h = s.deps.temporal.client.workflow.getHandle(workflowId);
      await eventually(async () => (await h.describe()).status.name === 'RUNNING');
      await h.terminate('test: the workflow is lost');
    };

    it('restarts or finishes, exactly once, every waiting row whose workflow is gone; counts and logs it', async () => {
      const s = await start({ RECONCILE_GRACE_MS: '1000', WEBHOOK_RETRY_SCHEDULE_MS: '1000,1000,1000,1000,1000,1000' });
      const schedule = await s.deps.temporal.client.schedule.getHandle(RECONCILE_SCHEDULE_ID).describe();
      expect(schedule.spec.intervals?.[0].every).to.equal(600_000); // the spec's 10 minutes
      const receiver = await startReceiver((n) => ({ status: n === 0 ? 500 : 200 }));
      try {
        const { app, base } = await seededApp();
        await post(`${base}/incentives`, app.api_key, { id: 'promo', name: 'Promo' });
        // A subscription (bought through the provider) to pause.
        await purchase(app, 'bob');
        await post(`${base}/webhooks`, app.api_key, { url: receiver.url, events: ['account.created'] });

        // 1. A delivery whose workflow dies after attempt 1 failed.
        await createAccount(app, {
          id: 'ada',
          incentive: 'promo',
          incentive_expires_at: new Date(Date.now() + 3_600_000).toISOString(),
        });
        const [delivery] = await eventually(async () => {
          const rows = await s.query<{ id: string; attempts: number }>(
            'select id, attempts from webhook_deliveries where app_id = $1 and attempts = 1',
            [app.id],
          );
          return rows.length === 1 ? rows : undefined;
        });
        await terminated(s, delivery.id);
        // 2. An account with a timed incentive whose actor is gone.
        await terminated(s, accountWorkflowId(app.id, 'ada'));
        // 3. A checkout whose workflow is gone, approved at the provider afterwards (its notification
        //    finds no workflow to wake).
        const chk = (
          await post(`${base}/offers/launch/checkout`, app.public_key, {
            plan: 'pro',
            interval: 'month',
            account: 'cy',
          })
        ).body;
        await terminated(s, checkoutWorkflowId(chk.id));
        await testEnv().paypal.approve(chk.approve_url);
        // 4. A paused subscription whose actor is gone (after its provider's notifications have come in).
        expect((await post(`${base}/namespaces/bob/subscription/pause`, app.api_key, { months: 1 })).status).to.equal(
          200,
        );
        await sleep(1_000);
        await eventually(async () => ((await s.query('select 1 from outbox')).length === 0 ? true : undefined));
        await terminated(s, accountWorkflowId(app.id, 'bob'));
        // 5. A reservation whose expiry workflow is gone (it holds 7 API calls for 1 s).
        const rsv = await post(`${base}/namespaces/ada/usage/api_calls/reservations`, app.api_key, {
          amount: 7,
          expires_in: 1,
        });
        expect(rsv.status, rsv.text).to.equal(201);
        await terminated(s, reservationExpiryWorkflowId(app.id, rsv.body.id));
        await sleep(3_000); // past the reservation's expiry and the delivery's next attempt
        const first = await runReconciler(s);
        expect(first.repaired).to.deep.equal({
          deliveries: 1,
          checkouts: 1,
          actors: 2,
          billing: 0,
          reservations: 1,
          outbox: 0,
        });
        expect(first.restarted).to.have.members([
          delivery.id,
          checkoutWorkflowId(chk.id),
          accountWorkflowId(app.id, 'bob'),
          accountWorkflowId(app.id, 'ada'),
          reservationExpiryWorkflowId(app.id, rsv.body.id),
        ]);

        // Past the pause's resume_at and the incentive's end on the app's clock: the restarted actors run those
        // dates. (Advanced only now: an advance starts any actor of the app that is not running, so before the
        // reconciler's run it would have repaired them itself.)
        const now = Date.parse((await get(`${base}/test-clock`, app.api_key)).body.now);
        expect(
          (await post(`${base}/test-clock/advance`, app.api_key, { to: new Date(now + 40 * 86_400_000).toISOString() }))
            .status,
        ).to.equal(200);

        // Each one is carried through once.
        await eventually(async () => {
          const [d] = await s.query<{ status: string; attempts: number }>(
            'select status, attempts from webhook_deliveries where id = $1',
            [delivery.id],
          );
          return d.status === 'succeeded' && d.attempts === 2;
        });
        const forAda = () => receiver.received.filter((r) => JSON.parse(r.body).data.object.id === 'ada');
        expect(forAda()).to.have.length(2);
        await eventually(
          async () => (await get(`${base}/checkouts/${chk.id}`, app.api_key)).body.status === 'completed',
          30_000,
        );
        await eventually(
          async () => (await get(`${base}/namespaces/bob/subscription`, app.api_key)).body.status === 'active',
        );
        expect((await get(`${base}/namespaces/bob`, app.api_key)).body.plan).to.equal('pro');
        await eventually(async () => (await get(`${base}/namespaces/ada`, app.api_key)).body.incentive === null);
        await eventually(
          async () =>
            (await get(`${base}/namespaces/ada/reservations/${rsv.body.id}`, app.api_key)).body.status === 'expired',
        );
        const [held] = await s.query<{ count: string; held: string }>(
          `select count, held from usage_counters where app_id = $1 and account_id = 'ada' and entitlement_id = 'api_calls'`,
          [app.id],
        );
        expect(held, 'the hold is released, nothing counted').to.deep.equal({ count: '0', held: '0' });

        // A second run finds nothing left to repair, and nothing was applied twice.
        const second = await runReconciler(s);
        expect(second.repaired).to.deep.equal({
          deliveries: 0,
          checkouts: 0,
          actors: 0,
          billing: 0,
          reservations: 0,
          outbox: 0,
        });
        const events = (await get(`${base}/events?limit=100`, app.api_key)).body.data.map(
          (e: { type: string }) => e.type,
        );
        expect(events.filter((t: string) => t === 'checkout.completed')).to.have.length(2); // bob's purchase and cy's
        expect(events.filter((t: string) => t === 'subscription.resumed')).to.have.length(1);
        expect(events.filter((t: string) => t === 'account.incentive_removed')).to.have.length(1);
        expect(forAda(), 'attempt 2 of the delivery was sent once').to.have.length(2);

        // The operators' counter and log.
        const totals = await s.query<{ kind: string; repaired: string }>(
          'select kind, repaired from reconciler_repairs order by kind',
        );
        expect(totals.map((r) => [r.kind, Number(r.repaired)])).to.deep.equal([
          ['actors', 2],
          ['checkouts', 1],
          ['deliveries', 1],
          ['reservations', 1],
        ]);
        expect((await get('/health')).body.repaired).to.deep.equal({
          actors: 2,
          checkouts: 1,
          deliveries: 1,
          reservations: 1,
        });
        expect(
          s.logs.filter((l) => l.msg === 'reconciler repaired waiting rows whose workflow was gone'),
        ).to.have.length(1);
      } finally {
        await receiver.close();
      }
    });
  });
});
