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
import { freeze, thaw } from '../test/helpers/freeze.js';
import { freePort } from '../test/helpers/servers.js';

const EVENTS = Number(process.env.CHAOS_EVENTS ?? 200);
const PG_DOWN_S = Number(process.env.CHAOS_PG_DOWN_S ?? 30);
const TEMPORAL_DOWN_S = Number(process.env.CHAOS_TEMPORAL_DOWN_S ?? 20);
const PG_FREEZE_S = Number(process.env.CHAOS_PG_FREEZE_S ?? 60);
const TEMPORAL_FREEZE_S = Number(process.env.CHAOS_TEMPORAL_FREEZE_S ?? 20);
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

async function until<T>(fn: () => Promise<T | undefined | false>, ms: number): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v) return v as T;
    if (Date.now() > end) throw new Error('timed out');
    await sleep(100);
  }
}

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

interface Probe {
  status: number;
  ms: number;
  /** The 503 said `outcome: "unknown"`: the database stopped answering while it committed the change. */
  unknown?: boolean;
}

/** A request whose caller waits `timeoutMs` at most (status 0: it gave up). */
async function timed(url: string, method = 'GET', token?: string, body?: unknown, timeoutMs = 5000): Promise<Probe> {
  const t = Date.now();
  try {
    const res = await fetch(url, {
      method,
      headers: {
        ...(token ? { Authorization: `Bearer ${token}` } : {}),
        ...(body ? { 'Content-Type': 'application/json' } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    return { status: res.status, ms: Date.now() - t, unknown: res.status === 503 && /"outcome":"unknown"/.test(text) };
  } catch {
    return { status: 0, ms: Date.now() - t };
  }
}

const tally = (xs: Probe[]) => {
  const statuses: Record<string, number> = {};
  for (const x of xs)
    statuses[x.status === 0 ? 'none' : x.status] = (statuses[x.status === 0 ? 'none' : x.status] ?? 0) + 1;
  return (
    `${xs.length}: answered within 5 s ${xs.filter((x) => x.status && x.ms <= 5000).length}, within 60 s ` +
    `${xs.filter((x) => x.status).length}, never ${xs.filter((x) => !x.status).length}; ` +
    `slowest ${Math.max(0, ...xs.filter((x) => x.status).map((x) => x.ms))} ms; statuses ${JSON.stringify(statuses)}`
  );
};

interface FreezeContext {
  base: string;
  app: { id: string; api_key: string; public_key?: string };
  pid: number | null;
  count: (q: string, params?: unknown[]) => Promise<number>;
}

/** What the PostgreSQL freeze also follows: webhook attempts and a checkout that wait on it (issue 39). */
interface WaitingWork {
  paypal: PayPalStandIn;
  received: { id: string; account?: string; at: number; status: number }[];
}

/**
 * PostgreSQL frozen under probes (/health, a read and a write each second, their callers waiting up to 60 s, as a
 * reliability engineer would) and writers (8 lanes: account creations, each a transaction, and usage adds, single
 * statements; their callers give up after 5 s). What matters: probes answered within 5 s, and writes that
 * committed although their caller got an error or gave up.
 */
async function frozenPostgres(ctx: FreezeContext & WaitingWork) {
  say(`\n3. PostgreSQL frozen ${PG_FREEZE_S} s (SIGSTOP of the server and its backends), then resumed`);
  const { base, app } = ctx;
  const A = `${base}/apps/${app.id}`;
  await timed(`${A}/plans/free/entitlements`, 'POST', app.api_key, { id: 'calls' });
  await timed(`${A}/namespaces`, 'POST', app.api_key, { id: 'meter' });
  // Work that will wait on the freeze: a checkout past its first scheduled checks (the next one is a minute away),
  // approved once PostgreSQL is frozen (its notification meets a 503), and 20 deliveries whose first attempt the
  // receiver refuses, so their second comes due during the freeze.
  await timed(`${A}/payments`, 'PUT', app.api_key, {
    client_id: 'chaos',
    client_secret: 'chaos-secret',
    env: 'sandbox',
  });
  await timed(A, 'PATCH', app.api_key, { checkout_url: 'https://shop.example/pricing' });
  await timed(`${A}/plans`, 'POST', app.api_key, {
    id: 'frz',
    name: 'Frozen',
    pricingCard: { monthlyPrice: 9, currency: 'USD' },
  });
  await timed(`${A}/offers`, 'POST', app.api_key, {
    id: 'frz',
    name: 'Frz',
    plans: [{ plan: 'frz', prices: [{ interval: 'month', amount: 9 }] }],
  });
  await timed(`${A}/offers/frz/publish`, 'POST', app.api_key);
  const chkRes = await fetch(`${A}/offers/frz/checkout`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${app.api_key}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ plan: 'frz', interval: 'month', account: 'frozen-buyer' }),
  });
  const chk = (await chkRes.json()) as { id?: string; approve_url?: string; error?: string };
  if (!chk.id) throw new Error(`checkout: ${chkRes.status} ${chk.error}`);
  await sleep(25_000); // its checks at 0, 2, 7 and 22 s; the next at 82 s
  for (let i = 0; i < 20; i++) await timed(`${A}/namespaces`, 'POST', app.api_key, { id: `fzw${i}` });
  await until(
    async () => ctx.received.filter((r) => r.account?.startsWith('fzw') && r.status === 500).length >= 20,
    60_000,
  );
  const usage = () =>
    ctx.count(`select coalesce(sum(count), 0) as n from usage_counters where app_id = ? and account_id = 'meter'`, [
      app.id,
    ]);
  const usageBefore = await usage();
  const writes: (Probe & { kind: 'account' | 'usage'; id: string })[] = [];
  const probes = { health: [] as Probe[], read: [] as Probe[], write: [] as Probe[] };
  let running = true;
  let frozenNow = false;
  const writers = Array.from({ length: 8 }, async (_, lane) => {
    for (let i = 0; running; i++) {
      const id = `fz${lane}_${i}`;
      const r =
        i % 2 === 0
          ? { kind: 'account' as const, ...(await timed(`${A}/namespaces`, 'POST', app.api_key, { id })) }
          : { kind: 'usage' as const, ...(await timed(`${A}/namespaces/meter/usage/calls/add`, 'POST', app.api_key)) };
      writes.push({ id, ...r });
    }
  });
  const pending: Promise<unknown>[] = [];
  const failedProbes: string[] = [];
  const prober = (async () => {
    for (let n = 0; running; n++) {
      if (frozenNow) {
        pending.push(
          timed(`${base}/health`, 'GET', undefined, undefined, 60_000).then((p) => probes.health.push(p)),
          timed(`${A}/plans`, 'GET', app.api_key, undefined, 60_000).then((p) => probes.read.push(p)),
          timed(`${A}/namespaces`, 'POST', app.api_key, { id: `probe${n}` }, 60_000).then((p) => {
            probes.write.push(p);
            if (p.status !== 201 && !p.unknown) failedProbes.push(`probe${n}`);
          }),
        );
      }
      await sleep(1000);
    }
  })();
  await sleep(1000);
  const pids = freeze(ctx.pid!);
  frozenNow = true;
  await ctx.paypal.approve(chk.approve_url!);
  await sleep(PG_FREEZE_S * 1000);
  frozenNow = false;
  thaw(pids);
  const thawedAt = Date.now();
  // What waited: when the last of the 20 second attempts arrived, and when the checkout completed.
  const waited = (async () => {
    const delivered = await until(async () => {
      const ok = ctx.received.filter((r) => r.account?.startsWith('fzw') && r.status === 200);
      return ok.length >= 20 ? Math.max(...ok.map((r) => r.at)) : undefined;
    }, 300_000).catch(() => null);
    const completed = await until(async () => {
      const res = await fetch(`${A}/checkouts/${chk.id}`, { headers: { Authorization: `Bearer ${app.api_key}` } });
      return res.ok && ((await res.json()) as { status: string }).status === 'completed' ? Date.now() : undefined;
    }, 300_000).catch(() => null);
    const notes = ctx.paypal.sent.filter((n) => n.url.endsWith(`/payments/webhooks/${app.id}`));
    return { delivered, completed, notes: notes.map((n) => n.status ?? 'none').join(', ') };
  })();
  let backMs = -1;
  for (;;) {
    const h = await timed(`${base}/health`);
    if (h.status === 200) {
      backMs = Date.now() - thawedAt;
      break;
    }
    if (Date.now() - thawedAt > 60_000) break;
    await sleep(100);
  }
  await sleep(5000);
  running = false;
  await Promise.all([...writers, prober, ...pending]);
  await sleep(3000); // whatever the server still held has run or failed
  // A 503 saying the outcome is unknown may have applied (a COMMIT under way when it froze): counted apart.
  const unknown = writes.filter((w) => w.kind === 'account' && w.unknown).map((w) => w.id);
  const failed = [
    ...writes.filter((w) => w.kind === 'account' && w.status !== 201 && !w.unknown).map((w) => w.id),
    ...failedProbes,
  ];
  const among = async (ids: string[]) =>
    ids.length
      ? await ctx.count(`select count(*) as n from accounts where app_id = ? and id in (?)`, [app.id, ids])
      : 0;
  const committedAfterError = await among(failed);
  const unknownCommitted = await among(unknown);
  const adds = writes.filter((w) => w.kind === 'usage');
  const applied = (await usage()) - usageBefore;
  const answered = adds.filter((w) => w.status === 200).length;
  say(`   probes while frozen (one of each per second, callers waiting up to 60 s):`);
  say(`     /health ${tally(probes.health)}`);
  say(`     read    ${tally(probes.read)}`);
  say(`     write   ${tally(probes.write)}`);
  const accounts = writes.filter((w) => w.kind === 'account');
  say(`   account writes (a transaction each; callers give up after 5 s): ${tally(accounts)}`);
  say(
    `   account writes (the writers' and the probes') committed after their caller got an error or gave up: ` +
      `${committedAfterError} of ${failed.length}; answered 503 "outcome unknown" ${unknown.length}, of those ` +
      `committed ${unknownCommitted}`,
  );
  say(
    `   usage adds (a single statement each): ${tally(adds)}; applied ${applied}, answered 200 ${answered}: ` +
      `${applied - answered} applied after their caller got an error or gave up`,
  );
  say(`   /health answered 200 again ${backMs} ms after SIGCONT (nothing restarted)`);
  const w = await waited;
  const after = (at: number | null) => (at === null ? 'never (5 minutes)' : `${((at - thawedAt) / 1000).toFixed(1)} s`);
  say(
    `   waited on the freeze: 20 webhook attempts due during it, the last delivered ${after(w.delivered)} after ` +
      `SIGCONT; a checkout approved during it (provider notifications answered ${w.notes}), completed ` +
      `${after(w.completed)} after SIGCONT`,
  );
}

/** Temporal frozen while accounts are created (each a webhook delivery start through the outbox). */
async function frozenTemporal(ctx: FreezeContext & { received: { id: string; type: string; account?: string }[] }) {
  say(`\n4. Temporal frozen ${TEMPORAL_FREEZE_S} s, then resumed, while accounts are created (each a workflow start)`);
  const { base, app } = ctx;
  const A = `${base}/apps/${app.id}`;
  const pids = freeze(ctx.pid!);
  const frozenAt = Date.now();
  const writes: Probe[] = [];
  const healths: Probe[] = [];
  for (let n = 0; Date.now() - frozenAt < TEMPORAL_FREEZE_S * 1000; n++) {
    const [w, h] = await Promise.all([
      timed(`${A}/namespaces`, 'POST', app.api_key, { id: `tf${n}` }, 60_000),
      timed(`${base}/health`, 'GET', undefined, undefined, 60_000),
      sleep(500),
    ]);
    writes.push(w);
    healths.push(h);
  }
  const backlog = await ctx.count('select count(*) as n from outbox');
  thaw(pids);
  const thawedAt = Date.now();
  await until(async () => (await ctx.count('select count(*) as n from outbox')) === 0, 300_000).catch(() => undefined);
  const drainMs = Date.now() - thawedAt;
  const ours = () => ctx.received.filter((r) => r.type === 'account.created' && r.account?.startsWith('tf'));
  await until(async () => ours().length >= writes.length, 120_000).catch(() => undefined);
  const got = ours();
  say(`   writes while frozen: ${tally(writes)}`);
  say(`   /health while frozen: ${tally(healths)}`);
  const distinct = new Set(got.map((r) => r.id)).size;
  say(
    `   outbox backlog ${backlog}, drained ${drainMs} ms after SIGCONT; deliveries ${got.length}, distinct ` +
      `${distinct} of ${writes.filter((w) => w.status === 201).length} accounts`,
  );
}

main().catch((err) => {
  process.stderr.write(`chaos failed: ${String((err as Error)?.stack ?? err)}\n`);
  process.exit(1);
});
