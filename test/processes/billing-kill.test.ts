// A billing intent when its worker dies (issue 40, item 9; `npm run chaos -- billing` is the large version): an API
// process and a worker process of their own (on a database and task queue of their own, so the suite's worker and
// outbox relay never take their work), the suite's Temporal and PayPal stand-in. The worker is SIGKILLed while the
// pause's provider call is held at the stand-in, which then completes it (the answer is lost, as when a process dies
// mid-call); a new worker takes the retried step, and the pause applies once. Then a step whose transaction committed
// but which could not report it (its next read stalls past the statement timeout): the retry answers what the first
// attempt did, not a 409 for an intent that applied.
import { expect } from 'chai';
import pg from 'pg';
import { connectBilling, purchase, seededApp, type SeededApp } from '../helpers/factories.js';
import { call, get, useBase } from '../helpers/http.js';
import {
  serviceEnv,
  startApi,
  startWorker,
  stopped,
  waitForListening,
  waitForOutput,
  type Started,
} from '../helpers/processes.js';
import { freePort, testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

describe('billing intents when the worker dies (processes of their own)', function () {
  this.timeout(150_000);
  let api: Started;
  let worker: Started;
  let env: Record<string, string>;
  let databaseUrl: string;
  const dbName = `offerkit_billing_kill_${process.pid}_${Date.now()}`;
  const query = async <T>(text: string, params: unknown[] = []) => {
    const c = new pg.Client({ connectionString: databaseUrl });
    await c.connect();
    try {
      return (await c.query(text, params)).rows as T[];
    } finally {
      await c.end();
    }
  };

  before(async function () {
    const { config, adminKey, paypal } = testEnv();
    const admin = new pg.Client({ connectionString: config.databaseUrl });
    await admin.connect();
    await admin.query(`create database ${dbName}`);
    await admin.end();
    const url = new URL(config.databaseUrl);
    url.pathname = `/${dbName}`;
    databaseUrl = url.toString();
    const port = await freePort();
    env = serviceEnv(port, {
      ADMIN_API_KEY: adminKey,
      DATABASE_URL: databaseUrl,
      TEMPORAL_TASK_QUEUE: `offerkit-billing-kill-${process.pid}`,
      PAYPAL_BASE_URL: paypal.baseUrl,
      LOG_LEVEL: 'info',
    });
    // Both migrate the new database at start (one at a time, under the migration lock).
    api = startApi(env);
    worker = startWorker(env);
    await Promise.all([waitForListening(api, 90_000), waitForOutput(worker, 'worker running', 90_000)]);
    useBase(`http://127.0.0.1:${port}`);
  });
  after(async () => {
    useBase(undefined);
    await Promise.all([api && stopped(api.child), worker && stopped(worker.child)]);
  });

  /** An app with ada subscribed through the stand-in; her provider subscription's id. */
  async function subscribed(): Promise<SeededApp & { subId: string }> {
    const seeded = await seededApp();
    await connectBilling(seeded.app);
    await purchase(seeded.app, 'ada');
    const sub = await get(`${seeded.base}/namespaces/ada/subscription`, seeded.app.api_key);
    expect(sub.status, sub.text).to.equal(200);
    // Its actor has taken the purchase (the provider's notifications arrive meanwhile): the outbox is empty.
    await eventually(async () => (await query('select 1 from outbox')).length === 0, 30_000);
    return { ...seeded, subId: String(sub.body.id) };
  }

  /** The account's timeline lines of one request. */
  const linesOf = (appId: string, requestId: string) =>
    query<{ kind: string; type: string }>(
      `select kind, type from account_timeline where app_id = $1 and data->>'request_id' = $2 order by id`,
      [appId, requestId],
    );

  it('SIGKILL of the worker while the pause calls the provider: a new worker retries it, and it applies once', async () => {
    const { app, base, subId } = await subscribed();
    const paypal = testEnv().paypal;
    const hold = paypal.holdNext('POST', `/v1/billing/subscriptions/${subId}/suspend`);
    const requestId = crypto.randomUUID();
    const pausing = call('POST', `${base}/namespaces/ada/subscription/pause`, {
      token: app.api_key,
      body: { months: 1 },
      headers: { 'X-Request-Id': requestId },
    });
    await hold.reached;
    worker.child.kill('SIGKILL');
    await new Promise((r) => worker.child.once('exit', r));
    // The provider carries out the call whose caller died: its answer is lost, its effect is not.
    hold.release();
    await eventually(async () => paypal.subscription(subId)?.status === 'SUSPENDED');
    worker = startWorker(env);
    await waitForOutput(worker, 'worker running', 90_000);

    const paused = await pausing;
    expect(paused.status, paused.text).to.equal(200);
    expect(paused.body.status).to.equal('paused');
    const suspends = paypal.received.filter((r) => r.method === 'POST' && r.path.endsWith(`${subId}/suspend`));
    expect(suspends, 'the retry asked the provider again').to.have.length(2);
    const events = (await get(`${base}/events?type=subscription.paused`, app.api_key)).body.data;
    expect(events, 'paused once').to.have.length(1);
    expect((await linesOf(app.id, requestId)).map((l) => `${l.kind}:${l.type}`)).to.deep.equal([
      'intent:pause',
      'outcome:account.plan_changed',
      'outcome:subscription.paused',
    ]);
    expect((await get(`${base}/namespaces/ada`, app.api_key)).body.plan).to.equal('free');
  });

  it('a step that committed but could not report it: the retry answers 200 with what it did, applied once', async () => {
    const { app, base, subId } = await subscribed();
    const paypal = testEnv().paypal;
    const hold = paypal.holdNext('POST', `/v1/billing/subscriptions/${subId}/suspend`);
    const requestId = crypto.randomUUID();
    const pausing = call('POST', `${base}/namespaces/ada/subscription/pause`, {
      token: app.api_key,
      body: { months: 1 },
      headers: { 'X-Request-Id': requestId },
    });
    await hold.reached;
    // The step's read after its commit (the account's new snapshot reads the payment connection) waits on this lock
    // until the statement timeout ends it: the attempt fails after its change committed.
    const locker = new pg.Client({ connectionString: databaseUrl });
    await locker.connect();
    await locker.query('begin');
    await locker.query('lock table payment_connections in access exclusive mode');
    hold.release();
    const blocked = `select count(*)::int as n from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock' and query ilike '%payment_connections%'`;
    await eventually(async () => (await query<{ n: number }>(blocked))[0].n > 0, 30_000);
    await eventually(async () => (await query<{ n: number }>(blocked))[0].n === 0, 30_000);
    await locker.query('commit');
    await locker.end();

    const paused = await pausing;
    expect(paused.status, paused.text).to.equal(200);
    expect(paused.body.status).to.equal('paused');
    const events = (await get(`${base}/events?type=subscription.paused`, app.api_key)).body.data;
    expect(events, 'paused once').to.have.length(1);
    const lines = (await linesOf(app.id, requestId)).map((l) => `${l.kind}:${l.type}`);
    expect(lines, 'no refusal: the retry found its own outcome').to.deep.equal([
      'intent:pause',
      'outcome:account.plan_changed',
      'outcome:subscription.paused',
    ]);
  });
});
