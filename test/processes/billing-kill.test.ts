// A billing intent when its worker dies (issue 40, item 9; `npm run chaos -- billing` is the large version): an API
// process and two worker processes of their own (on a database and task queue of their own, so the suite's worker and
// outbox relay never take their work), the suite's Temporal and PayPal stand-in. The worker running the pause's step
// (named by Temporal's pending activity) is SIGKILLed while the step's provider call is held at the stand-in, which
// then completes it (the answer is lost, as when a process dies mid-call); the other worker takes the retried step
// once its heartbeat is missed, and the pause applies once. Then a step whose transaction committed but which could
// not report it (its next read stalls past the statement timeout): the retry answers what the first attempt did, not
// a 409 for an intent that applied.
import { expect } from 'chai';
import pg from 'pg';
import { accountWorkflowId } from '../../workflows/shared.js';
import { purchase, seededApp, type SeededApp } from '../helpers/factories.js';
import { call, get, useBase } from '../helpers/http.js';
import { exited, serviceEnv, startApi, startReady, startWorker, stopped, type Started } from '../helpers/processes.js';
import { freePort, testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

describe('billing intents when the worker dies (processes of their own)', function () {
  this.timeout(120_000);
  let api: Started;
  let workers: Started[] = [];
  let env: Record<string, string>;
  let databaseUrl: string;
  /** Ada's app (the worker killed mid-step) and Bob's (the step that cannot report), each subscribed. */
  let ada: Subscribed;
  let bob: Subscribed;
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
    // Each migrates the new database at start (one at a time, under the migration lock), and is started again if it
    // exits while starting (a busy machine's first connection can time out). Two workers: the one that runs the step
    // is killed, the other is already polling when the step is retried.
    const starts = await Promise.allSettled([
      startReady(() => startApi(env), 'API listening'),
      startReady(() => startWorker(env), 'worker running'),
      startReady(() => startWorker(env), 'worker running'),
    ]);
    const up = starts.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    const failed = starts.find((r) => r.status === 'rejected');
    if (failed) {
      await Promise.all(up.map((p) => stopped(p.child)));
      throw failed.reason;
    }
    [api, ...workers] = up;
    useBase(`http://127.0.0.1:${port}`);
    [ada, bob] = await Promise.all([subscribed('ada'), subscribed('bob')]);
  });
  after(async () => {
    useBase(undefined);
    await Promise.all([api && stopped(api.child), ...workers.map((w) => stopped(w.child))]);
  });

  type Subscribed = SeededApp & { account: string; subId: string };
  /** An app with `account` subscribed through the stand-in, once its actor has taken the purchase's facts. */
  async function subscribed(account: string): Promise<Subscribed> {
    const seeded = await seededApp();
    await purchase(seeded.app, account);
    const sub = await get(`${seeded.base}/namespaces/${account}/subscription`, seeded.app.api_key);
    expect(sub.status, sub.text).to.equal(200);
    // The provider's notifications arrive meanwhile: the outbox is empty once the actor has taken them.
    await eventually(async () => (await query('select 1 from outbox')).length === 0, 30_000);
    return { ...seeded, account, subId: String(sub.body.id) };
  }

  /** The worker process that runs the actor's step now (Temporal's identity of a worker is `<pid>@<host>`). */
  async function workerRunningStep(app: SeededApp['app'], account: string): Promise<Started> {
    const handle = testEnv().deps.temporal.client.workflow.getHandle(accountWorkflowId(app.id, account));
    return eventually(async () => {
      const pending = (await handle.describe()).raw.pendingActivities ?? [];
      const step = pending.find((a) => a.activityType?.name === 'applyBillingIntent' && a.lastWorkerIdentity);
      const pid = Number(String(step?.lastWorkerIdentity ?? '').split('@')[0]);
      return workers.find((w) => w.child.pid === pid);
    }, 20_000);
  }

  /** The account's timeline lines of one request. */
  const linesOf = (appId: string, requestId: string) =>
    query<{ kind: string; type: string }>(
      `select kind, type from account_timeline where app_id = $1 and data->>'request_id' = $2 order by id`,
      [appId, requestId],
    );

  it('SIGKILL of the worker while the pause calls the provider: the other worker retries it, and it applies once', async () => {
    const { app, base, subId } = ada;
    const paypal = testEnv().paypal;
    const hold = paypal.holdNext('POST', `/v1/billing/subscriptions/${subId}/suspend`);
    const requestId = crypto.randomUUID();
    const pausing = call('POST', `${base}/namespaces/ada/subscription/pause`, {
      token: app.api_key,
      body: { months: 1 },
      headers: { 'X-Request-Id': requestId },
    });
    await hold.reached;
    const victim = await workerRunningStep(app, 'ada');
    victim.child.kill('SIGKILL');
    await exited(victim);
    workers = workers.filter((w) => w !== victim);
    // The provider carries out the call whose caller died: its answer is lost, its effect is not.
    hold.release();
    await eventually(async () => paypal.subscription(subId)?.status === 'SUSPENDED');

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
    const { app, base, subId } = bob;
    const paypal = testEnv().paypal;
    const hold = paypal.holdNext('POST', `/v1/billing/subscriptions/${subId}/suspend`);
    const requestId = crypto.randomUUID();
    const pausing = call('POST', `${base}/namespaces/bob/subscription/pause`, {
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
