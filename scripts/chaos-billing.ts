// `npm run chaos -- billing` (issue 40, item 9): billing intents under faults, on a stack of its own: embedded
// PostgreSQL, the Temporal dev server (on a file), API and worker processes started as real processes, and the PayPal
// stand-in. Every account is a customer going through every kind of intent (a change the buyer approves now, one at
// the renewal, withdrawing it, pause, resume, cancel now or at the period end, the four save offers, retrying a failed
// payment) while workers and the whole service (API and workers) are SIGKILLed at random points and Temporal is frozen
// (SIGSTOP) for two minutes. Then everything settles, the app's test clock runs every date the intents set, the
// reconciler runs, and the checks (scripts/chaos-billing-checks.ts) compare every account with the provider, every
// charge with what was applied, and every intent's answer with its account's timeline. Exit code 1 when anything is
// inconsistent.
//
// Settings: CHAOS_BILLING_ACCOUNTS (customers, default 30), CHAOS_BILLING_DUNNING (customers of a second app whose
// renewal payment failed first, default 8; they need a stand-in that can fail a payment), CHAOS_BILLING_FREEZE_S
// (default 120), CHAOS_BILLING_WINDOW_S (how long the customers and faults go on, default the freeze + 180),
// CHAOS_BILLING_WORKER_KILLS (default 4), CHAOS_BILLING_SERVICE_KILLS (default 2), CHAOS_BILLING_APIS and
// CHAOS_BILLING_WORKERS (processes, default 2 each), CHAOS_BILLING_SEED (the fault times and the customers' choices),
// CHAOS_BILLING_KEEP=1 keeps the data folder and the processes' logs (.test-data/chaos-billing-<pid>).
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { loadConfig } from '../src/config.js';
import { startEmbeddedPostgres } from '../src/db/embedded.js';
import { PayPalStandIn } from '../src/dev/paypal-standin.js';
import { closeDeps, openDeps } from '../src/runtime.js';
import { ensureTemporalCli, startTemporalDevServer } from '../src/temporal/devserver.js';
import { RECONCILE_SCHEDULE_ID, type ReconcileResult } from '../workflows/shared.js';
import { freeze, thaw } from '../test/helpers/freeze.js';
import { checkBilling, count, fmt } from './chaos-billing-checks.js';
import { call, Customers, persist, type Shop } from './chaos-billing-customers.js';
import { ROOT, serviceProc, type Proc } from './procs.js';
import { buildService } from './build-service.js';

const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const FREEZE_S = num('CHAOS_BILLING_FREEZE_S', 120);
const S = {
  accounts: num('CHAOS_BILLING_ACCOUNTS', 30),
  dunning: num('CHAOS_BILLING_DUNNING', 8),
  freezeS: FREEZE_S,
  windowS: num('CHAOS_BILLING_WINDOW_S', FREEZE_S + 180),
  workerKills: num('CHAOS_BILLING_WORKER_KILLS', 4),
  serviceKills: num('CHAOS_BILLING_SERVICE_KILLS', 2),
  apis: num('CHAOS_BILLING_APIS', 2),
  workers: num('CHAOS_BILLING_WORKERS', 2),
  seed: num('CHAOS_BILLING_SEED', Date.now() % 100_000),
};
const ADMIN = 'adm_chaos_billing_admin_key_01234567';
const PAYPAL = { client_id: 'chaos-billing', client_secret: 'chaos-billing-secret' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const say = (line: string) => process.stdout.write(`${line}\n`);
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** A small deterministic random source: a run's fault times and customers' choices replay with CHAOS_BILLING_SEED. */
function random(seed: number) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : 0;
}

/** Runs `fn` over `items`, `n` at a time. */
async function eachLimited<T>(items: T[], n: number, fn: (item: T) => Promise<void>) {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: Math.min(n, queue.length) }, async () => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) await fn(item);
    }),
  );
}

/** An app that sells through the stand-in: four plans, an offer, a cancel flow with the four save offers. */
async function setUpApp(base: () => string, name: string) {
  const shop0 = { base };
  const must = async (method: string, p: string, token: string, body?: unknown) => {
    const r = await call(shop0, method, p, token, body);
    if (r.status >= 300 || r.status === 0) throw new Error(`${method} ${p}: ${r.status} ${r.text}`);
    return r.body!;
  };
  const app = (await must('POST', '/apps', ADMIN, { name })) as { id: string; api_key: string; public_key: string };
  const A = `/apps/${app.id}`;
  const key = app.api_key;
  await must('POST', `${A}/plans`, key, { id: 'free', name: 'Free', isFree: true });
  const ladder = [
    { id: 'basic', price: 9 },
    { id: 'team', price: 29 },
    { id: 'pro', price: 99 },
  ];
  for (const p of ladder)
    await must('POST', `${A}/plans`, key, {
      id: p.id,
      name: p.id[0].toUpperCase() + p.id.slice(1),
      pricingCard: { monthlyPrice: p.price, currency: 'USD' },
    });
  await must('POST', `${A}/incentives`, key, { id: 'partner', name: 'Partner deal' });
  await must('PUT', `${A}/payments`, key, { ...PAYPAL, env: 'sandbox' });
  await must('PATCH', A, key, { checkout_url: 'https://shop.example/pricing' });
  await must('POST', `${A}/offers`, key, {
    id: 'launch',
    name: 'Launch',
    plans: [{ plan: 'team', prices: [{ interval: 'month', amount: 29 }] }],
  });
  await must('POST', `${A}/offers/launch/publish`, key);
  await must('POST', `${A}/cancel-flows`, key, {
    id: 'default',
    name: 'Default',
    status: 'active',
    steps: [
      {
        id: 'reason',
        type: 'question',
        title: 'Why are you leaving?',
        answers: [
          { id: 'price', label: 'Too expensive' },
          { id: 'features', label: 'I use few features' },
          { id: 'busy', label: 'Too busy right now' },
          { id: 'partner', label: 'A partner offers it' },
        ],
      },
      {
        id: 'offer',
        type: 'offer',
        title: 'Stay with us?',
        decline_label: 'No thanks',
        offers: [
          { kind: 'discount', percent: 25, cycles: 2, when: { answers: ['price'] } },
          { kind: 'downgrade', plan: 'basic', when: { answers: ['features'] } },
          { kind: 'pause', months: 1, when: { answers: ['busy'] } },
          { kind: 'incentive', incentive: 'partner', months: 1, when: { answers: ['partner'] } },
        ],
      },
      { id: 'confirm', type: 'confirm', title: 'Cancel?' },
    ],
  });
  return { app, ladder };
}

export async function runBillingChaos(): Promise<number> {
  await buildService(); // the bundle its API and worker processes run
  const started = Date.now();
  const rand = random(S.seed);
  const dir = path.join(ROOT, '.test-data', `chaos-billing-${process.pid}`);
  fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
  const cleanup: (() => Promise<unknown>)[] = [];
  const stopAll = async () => {
    for (const f of cleanup.reverse()) await f().catch(() => undefined);
  };
  say(`offerkit chaos billing: settings ${JSON.stringify(S)}; logs in ${path.relative(ROOT, dir)}`);
  try {
    // ---- the stack ----------------------------------------------------------------------------------------
    const quiet = pino({ level: 'silent' });
    const postgres = await startEmbeddedPostgres({ dir: path.join(dir, 'pg'), port: await freePort(), logger: quiet });
    cleanup.push(() => postgres.stop());
    const temporal = await startTemporalDevServer({
      cli: ensureTemporalCli(process.env.TEMPORAL_CLI, quiet),
      port: await freePort(),
      uiPort: null,
      namespace: 'default',
      dbFile: path.join(dir, 'temporal.sqlite'),
      logger: quiet,
    });
    cleanup.push(() => temporal.stop());
    const statePath = path.join(dir, 'paypal-state.json');
    const paypal = new PayPalStandIn({
      credentials: { [PAYPAL.client_id]: PAYPAL.client_secret },
      activationDelayMs: 300,
      statePath,
    });
    await paypal.start();
    cleanup.push(() => paypal.stop());
    const port = await freePort();
    const env: Record<string, string> = {
      DATABASE_URL: postgres.url,
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_NAMESPACE: 'default',
      TEMPORAL_TASK_QUEUE: 'offerkit-chaos-billing',
      ADMIN_API_KEY: ADMIN,
      DATA_DIR: dir,
      LOG_LEVEL: 'info',
      HOST: '127.0.0.1',
      PORT: String(port),
      API_REUSE_PORT: String(S.apis > 1),
      PAYPAL_BASE_URL: paypal.baseUrl,
      OUTBOX_POLL_MS: '500',
      ACTIVITY_RETRY_MAX_MS: '2000',
      RECONCILE_GRACE_MS: '1000',
      DB_POOL_MAX: '8',
    };
    const apis = Array.from({ length: S.apis }, (_, i) => serviceProc(`api-${i + 1}`, 'api', env, dir));
    const workers = Array.from({ length: S.workers }, (_, i) => serviceProc(`worker-${i + 1}`, 'worker', env, dir));
    const all = [...apis, ...workers];
    // The first API applies the migrations; then the others.
    await apis[0].startRetrying();
    await Promise.all(all.slice(1).map((p) => p.startRetrying()));
    cleanup.push(() => Promise.all(all.map((p) => p.kill('SIGTERM'))));
    const base = () => `http://127.0.0.1:${port}`;
    const config = loadConfig({
      NODE_ENV: 'test',
      DATA_DIR: dir,
      DATABASE_URL: postgres.url,
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_TASK_QUEUE: env.TEMPORAL_TASK_QUEUE,
      ADMIN_API_KEY: ADMIN,
      PAYPAL_BASE_URL: paypal.baseUrl,
      PORT: '0',
    });
    const deps = await openDeps(config, quiet, ADMIN);
    cleanup.push(() => closeDeps(deps));
    const db = new pg.Pool({ connectionString: postgres.url, max: 4 });
    cleanup.push(() => db.end());
    const count1 = async (q: string, params: unknown[] = []) => Number((await db.query(q, params)).rows[0].n);
    say(`stack: PostgreSQL, Temporal dev server, ${S.apis} API and ${S.workers} worker processes, PayPal stand-in`);

    // ---- the apps and their customers -------------------------------------------------------------------------
    const main = await setUpApp(base, 'chaos billing');
    const dun = await setUpApp(base, 'chaos billing dunning');
    const shop = (x: typeof main): Shop => ({
      base,
      appId: x.app.id,
      key: x.app.api_key,
      paypal,
      ladder: x.ladder,
    });
    const customers = new Customers(shop(main), rand);
    const dunning = new Customers(shop(dun), rand);
    const accounts = Array.from({ length: S.accounts }, (_, i) => `c${i}`);
    const failing = paypal as unknown as { failPayments?: (subId: string, count: number) => void };
    const dunningAccounts = failing.failPayments ? Array.from({ length: S.dunning }, (_, i) => `d${i}`) : [];
    await eachLimited([...accounts, 'probe'], 6, (a) => customers.subscribe(a));
    await eachLimited(dunningAccounts, 6, (a) => dunning.subscribe(a));
    if (dunningAccounts.length) {
      // Their renewal payment fails: the stand-in declines the next attempt, and the app's clock moves past the
      // renewal, so each starts the chaos past due (retry payment is their intent).
      const rows = (
        await db.query(`select provider_subscription_id as id, renews_at from subscriptions where app_id = $1`, [
          dun.app.id,
        ])
      ).rows as { id: string; renews_at: Date }[];
      for (const r of rows) failing.failPayments!(r.id, 1);
      const to = new Date(Math.max(...rows.map((r) => new Date(r.renews_at).getTime())) + 3_600_000);
      await persist(shop(dun), 'POST', `/apps/${dun.app.id}/test-clock/advance`, dun.app.api_key, { to });
      const pastDue = await count1(
        `select count(*) as n from subscriptions where app_id = $1 and status = 'past_due'`,
        [dun.app.id],
      );
      say(`dunning: ${pastDue} of ${rows.length} subscriptions past due before the chaos`);
    } else say('dunning: not run (this PayPal stand-in cannot fail a payment): no retry-payment intents');
    say(`customers: ${accounts.length + dunningAccounts.length} accounts subscribed in ${secs(Date.now() - started)}`);

    // ---- the faults -----------------------------------------------------------------------------------------
    const windowMs = S.windowS * 1000;
    const freezeAt = windowMs * (0.2 + rand() * 0.2);
    const free = (t: number) => t < freezeAt - 10_000 || t > freezeAt + S.freezeS * 1000 + 15_000;
    const planned: { at: number; kind: 'worker' | 'service' }[] = [];
    for (const [kind, n] of [
      ['worker', S.workerKills],
      ['service', S.serviceKills],
    ] as const)
      for (let i = 0; i < n; i++) {
        let at = 0;
        for (let tries = 0; tries < 100 && (!at || !free(at)); tries++) at = 5_000 + rand() * (windowMs - 25_000);
        planned.push({ at, kind });
      }
    planned.sort((a, b) => a.at - b.at);
    const hits: string[] = [];
    const faultLog: string[] = [];
    const freezeFigures: string[] = [];
    const chaosStart = Date.now();
    /** The intents in flight at a kill (recorded, and said on the fault's line). */
    const hit = () => {
      const now = [...customers.inFlight.values(), ...dunning.inFlight.values()];
      hits.push(...now);
      return now.length ? `${now.length} intents in flight (${fmt(count(now))})` : 'no intent in flight';
    };
    const restart = async (procs: Proc[]) => {
      for (const p of procs)
        await p.startRetrying().catch((err: unknown) => faultLog.push(`${p.name} did not start: ${String(err)}`));
    };
    const faults = (async () => {
      let froze = false;
      for (const f of planned) {
        if (!froze && f.at > freezeAt) {
          froze = true;
          await freezeTemporal();
        }
        await sleep(Math.max(0, chaosStart + f.at - Date.now()));
        const inFlight = hit();
        const killedAt = Date.now();
        const at = secs(killedAt - chaosStart);
        if (f.kind === 'worker') {
          const w = workers[Math.floor(rand() * workers.length)];
          await w.kill('SIGKILL');
          await sleep(1000 + rand() * 3000);
          await restart([w]);
          faultLog.push(`+${at}: ${w.name} SIGKILLed, ${inFlight}; ready again after ${secs(Date.now() - killedAt)}`);
        } else {
          await Promise.all(all.map((p) => p.kill('SIGKILL')));
          await sleep(2000 + rand() * 3000);
          await Promise.all(all.map((p) => restart([p])));
          faultLog.push(
            `+${at}: the whole service SIGKILLed, ${inFlight}; ready again after ${secs(Date.now() - killedAt)}`,
          );
        }
      }
      if (!froze) await freezeTemporal();
    })();
    async function freezeTemporal() {
      await sleep(Math.max(0, chaosStart + freezeAt - Date.now()));
      const asked0 = customers.asked.length + dunning.asked.length;
      const pids = freeze(temporal.pid!);
      const frozenAt = Date.now();
      faultLog.push(`+${secs(frozenAt - chaosStart)}: Temporal frozen (SIGSTOP) for ${S.freezeS} s`);
      await sleep(S.freezeS * 1000);
      thaw(pids);
      const thawedAt = Date.now();
      const during = [...customers.asked, ...dunning.asked]
        .slice(asked0)
        .filter((a) => a.startedAt >= frozenAt && a.startedAt + 5_000 <= thawedAt);
      // Recovery: a probe intent (a sync) every 250 ms until one answers 200; then the outbox's backlog.
      let intentBackMs = -1;
      for (;;) {
        const r = await call(
          { base },
          'POST',
          `/apps/${main.app.id}/namespaces/probe/subscription/sync`,
          main.app.api_key,
          {},
          undefined,
          10_000,
        );
        if (r.status === 200) {
          intentBackMs = Date.now() - thawedAt;
          break;
        }
        if (Date.now() - thawedAt > 300_000) break;
        await sleep(250);
      }
      for (const end = Date.now() + 300_000; Date.now() < end; await sleep(250))
        if ((await count1('select count(*) as n from outbox')) === 0) break;
      const drainedMs = Date.now() - thawedAt;
      const answer = (a: (typeof during)[number]) =>
        `${a.status}${a.nothing ? ' nothing changed' : a.unknown ? ' outcome unknown' : ''}`;
      const quick = during.filter((a) => a.nothing).map((a) => a.ms);
      freezeFigures.push(
        `intents sent while frozen ${during.length}: ${fmt(count(during.map(answer)))}; 503 "nothing was changed" ` +
          `answered in p50 ${percentile(quick, 50)} ms, max ${Math.max(0, ...quick)} ms`,
        `recovery after SIGCONT: the first intent answered 200 after ${secs(intentBackMs)}, the outbox empty after ` +
          `${secs(drainedMs)}`,
      );
      faultLog.push(`+${secs(thawedAt - chaosStart)}: Temporal resumed (SIGCONT)`);
    }
    const runs = [
      ...accounts.map((a) => customers.run(a, chaosStart + windowMs)),
      ...dunningAccounts.map((a) => dunning.run(a, chaosStart + windowMs)),
    ];
    await faults;
    await Promise.all(runs);
    const asked = [...customers.asked, ...dunning.asked];
    say(`chaos: ${asked.length} intents in ${secs(Date.now() - chaosStart)}`);
    for (const f of faultLog) say(`  fault ${f}`);

    // ---- settle: every process up, the outbox empty, every date the intents set run on the clock ------------------
    const dead = all.filter((p) => !p.alive);
    if (dead.length) say(`  restarting ${dead.map((p) => p.name).join(', ')} (exited by themselves)`);
    await restart(dead);
    const settled = async () => {
      for (const end = Date.now() + 300_000; Date.now() < end; await sleep(500))
        if ((await count1('select count(*) as n from outbox')) === 0) return;
      throw new Error('the outbox did not drain within 5 minutes');
    };
    await settled();
    await sleep(5_000);
    for (const x of [main, ...(dunningAccounts.length ? [dun] : [])]) {
      const now = (await persist(shop(x), 'GET', `/apps/${x.app.id}/test-clock`, x.app.api_key)).body as {
        now: string;
      };
      const to = new Date(Date.parse(now.now) + 35 * 86_400_000).toISOString();
      const r = await persist(shop(x), 'POST', `/apps/${x.app.id}/test-clock/advance`, x.app.api_key, { to }, 600_000);
      say(`settle: ${x === main ? 'main' : 'dunning'} app's clock moved 35 days ahead: ${r.status}`);
    }
    await settled();
    await sleep(10_000);

    // ---- the reconciler, as its Schedule runs it ------------------------------------------------------------
    const schedule = deps.temporal.client.schedule.getHandle(RECONCILE_SCHEDULE_ID);
    const before = (await schedule.describe()).info.recentActions.length;
    await schedule.trigger();
    let action;
    for (const end = Date.now() + 120_000; !action && Date.now() < end; await sleep(500)) {
      const d = await schedule.describe();
      if (d.info.recentActions.length > before) action = d.info.recentActions.at(-1);
    }
    if (!action) throw new Error('the reconciler did not run');
    const wf = action.action.workflow;
    const reconciled = (await deps.temporal.client.workflow
      .getHandle(wf.workflowId, wf.firstExecutionRunId)
      .result()) as ReconcileResult;
    await settled();
    await sleep(10_000);

    // ---- the figures ------------------------------------------------------------------------------------------
    const result = await checkBilling(deps, db, [main.app.id, dun.app.id], asked, statePath);
    const statuses = count(
      asked.map((a) =>
        a.status === 0
          ? 'no answer'
          : a.nothing
            ? '503 nothing changed'
            : a.unknown
              ? '503 outcome unknown'
              : String(a.status),
      ),
    );
    const refusals = count(asked.filter((a) => a.status === 409).map((a) => a.reason ?? '?'));
    const ok = asked.filter((a) => a.status === 200).map((a) => a.ms);
    say('\nintents');
    say(`  tried ${asked.length}: ${fmt(count(asked.map((a) => a.kind)))}`);
    say(`  answered: ${fmt(statuses)}`);
    say(`  409 reasons: ${fmt(refusals)}`);
    say(`  200 latency p50 ${percentile(ok, 50)} ms, p99 ${percentile(ok, 99)} ms, max ${Math.max(0, ...ok)} ms`);
    const also = (k: keyof Customers['counts']) => customers.counts[k] + dunning.counts[k];
    say(
      `  customers also: checkouts ${also('checkouts')}, approvals at PayPal ${also('approvals')}, refused there ` +
        `${also('refusals')}, cancel sessions ${also('sessions')}, return pages not reached ${also('returnsLost')}`,
    );
    say('faults');
    say(
      `  SIGKILL: worker ${planned.filter((p) => p.kind === 'worker').length}, whole service ` +
        `${planned.filter((p) => p.kind === 'service').length}; ` +
        `intents in flight at the kills: ${hits.length} (${fmt(count(hits))})`,
    );
    say(`  Temporal frozen ${S.freezeS} s:`);
    for (const f of freezeFigures) say(`    ${f}`);
    say(`reconciler: checked ${fmt(reconciled.checked)}; repaired ${fmt(reconciled.repaired)}`);
    say('checks');
    for (const f of result.figures) say(`  ${f}`);
    say(`inconsistencies: ${result.problems.length}`);
    for (const p of result.problems.slice(0, 40)) say(`  ${p}`);
    say(`whole run ${secs(Date.now() - started)}`);
    await stopAll();
    if (process.env.CHAOS_BILLING_KEEP !== '1' && result.problems.length === 0)
      fs.rmSync(dir, { recursive: true, force: true });
    else say(`logs kept in ${path.relative(ROOT, dir)}`);
    return result.problems.length ? 1 : 0;
  } catch (err) {
    say(`chaos billing failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    say(`logs kept in ${dir}`);
    await stopAll();
    return 2;
  }
}
