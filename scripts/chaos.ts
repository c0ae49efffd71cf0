// `npm run chaos`: reproduces the outages of issue 13 on a stack of its own (embedded PostgreSQL,
// Temporal dev server, worker with the outbox relay, API, PayPal stand-in, a webhook receiver) and
// prints the figures. Not part of CI; takes a few minutes. Settings: CHAOS_EVENTS (default 200),
// CHAOS_PG_DOWN_S (default 30), CHAOS_TEMPORAL_DOWN_S (default 20).
//
// `npm run chaos -- freeze` (issue 29): the servers stop answering instead of going away: PostgreSQL, then
// Temporal, frozen with SIGSTOP (the process and its children) and resumed with SIGCONT, under probes (/health, a
// read, a write each second, a caller waiting up to 60 s) and writers (callers that give up after 5 s). Prints the
// probes answered within 5 s, within 60 s and never, and the writes committed after their caller got an error or
// gave up. Settings: CHAOS_PG_FREEZE_S (default 60), CHAOS_TEMPORAL_FREEZE_S (default 20). `-- all` runs both.
//
// `npm run chaos -- soak`: memory under 30 minutes of steady mixed load (scripts/soak.ts).
//
// `npm run chaos -- topology` (issue 34): `npm run topology` at a small size (60 accounts, 120 usage adds, 5
// checkouts) on the real Temporal cluster, with its faults; see scripts/topology.ts.
//
// `npm run chaos -- offline` (issue 44): the API process down for CHAOS_OFFLINE_S (60) while a client answers checks
// from memory and buffers usage, the client itself SIGKILLed and restarted on its buffer file mid-outage; see
// scripts/chaos-offline.ts.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { createApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../src/db/embedded.js';
import { closeDeps, openDeps } from '../src/runtime.js';
import { ensureTemporalCli, startTemporalDevServer, type DevServerHandle } from '../src/temporal/devserver.js';
import { createWorker } from '../src/worker-runtime.js';
import { PayPalStandIn } from '../src/dev/paypal-standin.js';
import { freePort } from '../test/helpers/servers.js';
import { frozenPostgres, frozenTemporal, PG_FREEZE_S, TEMPORAL_FREEZE_S, until } from './chaos-freeze.js';

const EVENTS = Number(process.env.CHAOS_EVENTS ?? 200);
const PG_DOWN_S = Number(process.env.CHAOS_PG_DOWN_S ?? 30);
const TEMPORAL_DOWN_S = Number(process.env.CHAOS_TEMPORAL_DOWN_S ?? 20);
const MODE = process.argv[2] ?? 'stop';
if (!['stop', 'freeze', 'all', 'soak', 'topology', 'billing', 'offline'].includes(MODE))
  throw new Error(`unknown mode ${MODE}: stop (default), freeze, all, soak, topology, billing or offline`);
// `npm run chaos -- billing` (issue 40): billing intents while workers and the whole service are SIGKILLed and
// Temporal is frozen, every account then compared with the provider; see scripts/chaos-billing.ts.
if (MODE === 'billing') process.exit(await (await import('./chaos-billing.js')).runBillingChaos());
// `npm run chaos -- offline` (issue 44): the API stopped while a client checks and tracks with the SDK's local
// evaluator, which is itself killed and restarted on its buffer file; see scripts/chaos-offline.ts.
if (MODE === 'offline') {
  const offline = await import('./chaos-offline.js');
  process.exit(await offline.runOfflineChaos(offline.offlineSettingsFromEnv()));
}
if (MODE === 'soak') {
  await import('./soak.js');
  await new Promise(() => undefined); // soak.ts exits by itself
}
if (MODE === 'topology') {
  // `npm run chaos -- topology` (issue 34): the small version of `npm run topology`, on the real Temporal cluster with
  // its faults (one history service, one worker and one API process SIGKILLed and restarted); test/processes/topology.test.ts
  // runs a smaller one in the suite.
  const small = {
    TOPOLOGY_ACCOUNTS: '60',
    TOPOLOGY_USAGE: '120',
    TOPOLOGY_CHECKOUTS: '5',
    TOPOLOGY_EXPIRY_S: '30',
  };
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/topology.ts'], {
    cwd: path.resolve(import.meta.dirname, '..'),
    env: { ...small, ...process.env },
    stdio: 'inherit',
  });
  process.exit(r.status ?? 1);
}
const ADMIN = 'adm_chaos';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const say = (line: string) => process.stdout.write(line + '\n');

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : 0;
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'offerkit-chaos-'));
  fs.chmodSync(dir, 0o755);
  const quiet = pino({ level: 'silent' });
  const logger = pino({ level: process.env.LOG_LEVEL ?? 'silent' });
  const pgPort = await freePort();
  const temporalPort = await freePort();
  const startPg = () => startEmbeddedPostgres({ dir: path.join(dir, 'pg'), port: pgPort, logger: quiet });
  const startTemporal = () =>
    startTemporalDevServer({
      cli: ensureTemporalCli(process.env.TEMPORAL_CLI, quiet),
      port: temporalPort,
      uiPort: null,
      namespace: 'default',
      dbFile: path.join(dir, 'temporal.sqlite'),
      logger: quiet,
    });
  let pg: EmbeddedPostgresHandle = await startPg();
  let temporal: DevServerHandle = await startTemporal();
  const paypal = new PayPalStandIn({ credentials: { chaos: 'chaos-secret' }, activationDelayMs: 500 });
  await paypal.start();

  // The receiver: counts every webhook by its id. The first attempt for an account `fzw...` is refused (500), so its
  // second attempt comes due while PostgreSQL is frozen (the freeze scenario).
  const received: { id: string; type: string; account?: string; at: number; status: number }[] = [];
  const receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const e = JSON.parse(body) as { type: string; data?: { object?: { id?: string } } };
      const id = String(req.headers['webhook-id']);
      const account = e.data?.object?.id;
      const status = account?.startsWith('fzw') && !received.some((r) => r.id === id) ? 500 : 200;
      received.push({ id, type: e.type, account, at: Date.now(), status });
      res.writeHead(status).end(status === 200 ? 'ok' : 'not now');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as net.AddressInfo).port}/hooks`;

  const config = loadConfig({
    NODE_ENV: 'test',
    DATA_DIR: dir,
    DATABASE_URL: pg.url,
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_TASK_QUEUE: 'offerkit-chaos',
    ADMIN_API_KEY: ADMIN,
    WEBHOOKS_ALLOW_PRIVATE_URLS: 'true',
    PAYPAL_BASE_URL: paypal.baseUrl,
    OUTBOX_POLL_MS: '500',
    WEBHOOK_RETRY_SCHEDULE_MS: '2000,2000,2000,2000,2000,2000',
    // The activities' backoff at its shipped cap (a minute): what waited on an outage must resume by itself.
    DB_POOL_MAX: '10',
    PORT: '0',
    // The shipped throttling defaults: a backend's secret key is not rate limited.
  });
  const deps = await openDeps(config, logger, ADMIN);
  const worker = await createWorker(deps);
  deps.outbox.start();
  const server = http.createServer(createApp(deps).callback());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const base = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  const api = async (method: string, p: string, token: string, body?: unknown) => {
    const t = Date.now();
    const res = await fetch(base + p, {
      method,
      headers: { Authorization: `Bearer ${token}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    return {
      status: res.status,
      body: text ? (JSON.parse(text) as Record<string, unknown>) : null,
      ms: Date.now() - t,
    };
  };
  const count = async (q: string, params: unknown[] = []) =>
    Number(((await deps.orm.em.fork().getConnection().execute(q, params)) as { n: string }[])[0].n);

  say(
    MODE === 'freeze'
      ? `offerkit chaos: PostgreSQL frozen ${PG_FREEZE_S} s, Temporal frozen ${TEMPORAL_FREEZE_S} s`
      : `offerkit chaos: ${EVENTS} events per scenario, PostgreSQL down ${PG_DOWN_S} s, Temporal down ${TEMPORAL_DOWN_S} s`,
  );
  const app = (await api('POST', '/apps', ADMIN, { name: 'chaos' })).body as { id: string; api_key: string };
  const key = app.api_key;
  const A = `/apps/${app.id}`;
  await api('POST', `${A}/entitlements`, key, { id: 'calls', type: 'usage', name: 'Calls' });
  await api('POST', `${A}/plans`, key, { id: 'free', name: 'Free', isFree: true });
  await api('POST', `${A}/incentives`, key, { id: 'promo', name: 'Promo' });
  await api('POST', `${A}/webhooks`, key, { url: receiverUrl, events: ['account.created'] });

  if (MODE !== 'freeze') {
    // ---- Scenario 1: Temporal down under writes ----------------------------------------------------
    say('\n1. Temporal down while accounts are created (each emits account.created: a delivery workflow start)');
    await temporal.stop();
    const writes = await Promise.all(
      Array.from({ length: EVENTS }, (_, i) => api('POST', `${A}/namespaces`, key, { id: `t${i}` })),
    );
    const reads = await Promise.all(Array.from({ length: 20 }, () => api('GET', `${A}/namespaces/t0/plan`, key)));
    await sleep(TEMPORAL_DOWN_S * 1000);
    const backlog = await count('select count(*) as n from outbox');
    temporal = await startTemporal();
    const back = Date.now();
    await until(async () => (await count('select count(*) as n from outbox')) === 0, 300_000);
    const drainMs = Date.now() - back;
    await until(async () => received.filter((r) => r.type === 'account.created').length >= EVENTS, 300_000).catch(
      () => undefined,
    );
    const t1 = received.filter((r) => r.type === 'account.created');
    const t1ids = new Set(t1.map((r) => r.id));
    say(
      `   writes: ${writes.filter((w) => w.status === 201).length}/${EVENTS} answered 201; latency p50 ${percentile(
        writes.map((w) => w.ms),
        50,
      )} ms, max ${Math.max(...writes.map((w) => w.ms))} ms`,
    );
    say(
      `   reads during the outage: ${reads.filter((r) => r.status === 200).length}/20 answered 200; p50 ${percentile(
        reads.map((r) => r.ms),
        50,
      )} ms, max ${Math.max(...reads.map((r) => r.ms))} ms`,
    );
    say(
      `   outbox backlog ${backlog} commands, drained ${drainMs} ms after Temporal was back ` +
        `(${Math.round((backlog / Math.max(drainMs, 1)) * 1000)} per second, server start-up included)`,
    );
    say(
      `   events ${EVENTS}, deliveries received ${t1.length}, distinct ids ${t1ids.size}, ` +
        `duplicates ${t1.length - t1ids.size}, lost ${EVENTS - t1ids.size}`,
    );

    // ---- Scenario 2: PostgreSQL down mid-schedule, a checkout approved and timers due meanwhile ------
    say(`\n2. PostgreSQL down ${PG_DOWN_S} s while deliveries, a checkout and incentive expiries are in flight`);
    received.length = 0;
    await api('PUT', `${A}/payments`, key, { client_id: 'chaos', client_secret: 'chaos-secret', env: 'sandbox' });
    await api('PATCH', A, key, { checkout_url: 'https://shop.example/pricing' });
    await api('POST', `${A}/plans`, key, {
      id: 'pro',
      name: 'Pro',
      pricingCard: { monthlyPrice: 10, currency: 'USD' },
    });
    await api('POST', `${A}/offers`, key, {
      id: 'o',
      name: 'O',
      plans: [{ plan: 'pro', prices: [{ interval: 'month', amount: 5 }] }],
    });
    await api('POST', `${A}/offers/o/publish`, key);
    const chk = (await api('POST', `${A}/offers/o/checkout`, key, { plan: 'pro', interval: 'month', account: 'buyer' }))
      .body as { id: string; approve_url: string };
    const expiresAt = new Date(Date.now() + 5_000);
    const created = await Promise.all(
      Array.from({ length: EVENTS }, (_, i) =>
        api('POST', `${A}/namespaces`, key, {
          id: `p${i}`,
          incentive: 'promo',
          incentive_expires_at: expiresAt.toISOString(),
        }),
      ),
    );
    await sleep(1000);
    await pg.stop();
    const downAt = Date.now();
    await paypal.approve(chk.approve_url);
    const during = await api('GET', `${A}/namespaces/p0`, key).catch(() => ({ status: 0, ms: 0 }));
    await sleep(PG_DOWN_S * 1000);
    pg = await startPg();
    const upAt = Date.now();
    await until(
      async () =>
        (await count(`select count(*) as n from accounts where app_id = ? and incentive_id is not null`, [app.id])) ===
          0 &&
        (await count(`select count(*) as n from webhook_deliveries where app_id = ? and status = 'pending'`, [
          app.id,
        ])) === 0 &&
        (await count(`select count(*) as n from checkouts where id = ? and status = 'completed'`, [chk.id])) === 1,
      300_000,
    ).catch(() => undefined);
    const removedAt = Date.now();
    const events = await count(`select count(*) as n from events where app_id = ? and type = 'account.created'`, [
      app.id,
    ]);
    const t2 = received.filter((r) => r.type === 'account.created');
    const t2ids = new Set(t2.map((r) => r.id));
    const stuck = await count(`select count(*) as n from webhook_deliveries where app_id = ? and status = 'pending'`, [
      app.id,
    ]);
    const applications = await count(
      `select count(*) as n from events where app_id = ? and type = 'checkout.completed'`,
      [app.id],
    );
    const incentivesLeft = await count(
      `select count(*) as n from accounts where app_id = ? and incentive_id is not null`,
      [app.id],
    );
    say(`   during the outage: a read answered ${during.status} in ${during.ms} ms`);
    say(`   writes before it: ${created.filter((c) => c.status === 201).length}/${EVENTS} answered 201`);
    say(
      `   events ${events - EVENTS}, deliveries received ${t2.length}, distinct ids ${t2ids.size}, ` +
        `duplicates ${t2.length - t2ids.size}, stuck ${stuck}, lost ${events - EVENTS - t2ids.size}`,
    );
    say(`   checkout approved during the outage: applied ${applications} time(s)`);
    say(
      `   incentive expiries (due ${Math.round((expiresAt.getTime() - downAt) / 1000)} s into the outage): ` +
        `${EVENTS - incentivesLeft}/${EVENTS} removed; last removal ${removedAt - upAt} ms after PostgreSQL was back, ` +
        `${removedAt - expiresAt.getTime()} ms after the expiry`,
    );
  }

  if (MODE !== 'stop') {
    await frozenPostgres({ base, app, pid: pg.pid, count, paypal, received });
    await frozenTemporal({ base, app, pid: temporal.pid, count, received });
  }

  server.close();
  server.closeAllConnections();
  receiver.close();
  receiver.closeAllConnections();
  await worker.shutdown();
  await closeDeps(deps);
  await temporal.stop();
  await pg.stop();
  await paypal.stop();
  fs.rmSync(dir, { recursive: true, force: true });
  process.exit(0);
}

main().catch((err) => {
  process.stderr.write(`chaos failed: ${String((err as Error)?.stack ?? err)}\n`);
  process.exit(1);
});
