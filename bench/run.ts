// npm run bench: throughput and latency of the hot paths through HTTP, beside the raw database
// ceiling for the very same SQL statement over a plain pg pool; and analytics at scale.
// Servers: the same ones the tests start (embedded PostgreSQL, Temporal dev server), with the API in
// its own process so the load generator does not share its event loop.
import { spawn } from 'node:child_process';
import { localBench } from './local.js';
import { markdownTarget, sectionRecorder } from './markdown.js';
import fs from 'node:fs';
import http from 'node:http';
import inspector from 'node:inspector/promises';
import type net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import { baselineWorkflow } from './baseline/workflow.js';
import autocannon from 'autocannon';
import pg from 'pg';
import { AccountTokenClient, SecretClient } from '@offerkit/sdk';
import { access, EFFECTIVE_ACCESS_SQL } from '../src/access/access.service.js';
import { change, CHANGE_SQL } from '../src/usage/usage.service.js';
import { setCoalesceInFlight } from '../src/db/coalesce.js';
import { INGEST_SQL, ingestParams, type IngestEvent } from '../src/usage/ingest.service.js';
import * as analytics from '../src/analytics/analytics.service.js';
import { rollUpUsage } from '../src/housekeeping/rollup.js';
import { longStatements } from '../src/db/sql.js';
import { usageRollupAppWorkflowId } from '../workflows/shared.js';
import type { Ctx } from '../src/context.js';
import { loadApp } from '../src/http/credentials.js';
import { sql } from '../src/db/sql.js';
import { newConnectionId } from '../src/mcp/connections.js';
import { mcpResourceUrl } from '../src/oauth/oauth.service.js';
import { issueTokenPair, newFamilyId } from '../src/oauth/tokens.js';
import { createTestApp, seedCatalog } from '../test/helpers/factories.js';
import { billingBench } from './billing.js';
import { creditsBench } from './credits.js';
import { freePort, startTestEnv, stopTestEnv, testEnv } from '../test/helpers/servers.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DURATION = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = (process.env.BENCH_CONNECTIONS ?? '1,16,64').split(',').map(Number);
const ACCOUNTS = 1000;
const ANALYTICS_ROWS = Number(process.env.BENCH_ANALYTICS_ROWS ?? 10_000_000);
const ANALYTICS_TODAY = Number(process.env.BENCH_ANALYTICS_TODAY ?? 0);
/** The API's `DB_COALESCE_IN_FLIGHT` (its default unless set), which the raw coalesced loop follows too. */
const COALESCE_IN_FLIGHT = Number(process.env.DB_COALESCE_IN_FLIGHT ?? 2);
const API_PROCESSES = Number(process.env.BENCH_API_PROCESSES ?? 1);

interface Stats {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  /** CPU time the API process used per request (user and system, all its threads), in µs. */
  apiCpu?: number;
  /** CPU per request of every process on its way, in µs: this process (the load generator), the API, PostgreSQL. */
  account?: CpuAccount;
}

interface CpuAccount {
  load: number;
  api: number;
  postgres: number;
  /** The whole machine over the cell, in % of all cores' time (/proc/stat): idle, interrupts, stolen by the host. */
  machine?: { idle: number; irq: number; steal: number };
}

/** /proc/stat's aggregate line: user nice system idle iowait irq softirq steal, in ticks; undefined without it. */
function machineTicks(): number[] | undefined {
  try {
    const line = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0];
    return line.trim().split(/\s+/).slice(1, 9).map(Number);
  } catch {
    return undefined;
  }
}

function machineShare(before: number[] | undefined, after: number[] | undefined): CpuAccount['machine'] {
  if (!before || !after) return undefined;
  const d = after.map((v, i) => v - before[i]);
  const total = d.reduce((a, b) => a + b, 0);
  if (!total) return undefined;
  const pct = (x: number) => (x / total) * 100;
  return { idle: pct(d[3] + d[4]), irq: pct(d[5] + d[6]), steal: pct(d[7]) };
}

/**
 * CPU seconds of each process with this command name by pid (`postgres`: the postmaster, backends and background
 * workers; `temporal`: the dev server), or undefined without /proc.
 */
function processSeconds(comm = 'postgres'): Map<number, number> | undefined {
  try {
    const byPid = new Map<number, number>();
    for (const entry of fs.readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        if (fs.readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== comm) continue;
        const seconds = cpuSeconds(Number(entry));
        if (seconds !== undefined) byPid.set(Number(entry), seconds);
      } catch {
        // the process ended while we looked
      }
    }
    return byPid;
  } catch {
    return undefined;
  }
}

/** CPU the processes of a reading used since an earlier one: processes started meanwhile count whole, ended ones are lost. */
function secondsDelta(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, seconds] of after) total += Math.max(0, seconds - (before.get(pid) ?? 0));
  return total;
}

/** CPU per unit of work (µs) by process since a reading started, and the machine's idle share meanwhile. */
interface CpuReading extends CpuAccount {
  /** The Temporal dev server. */
  temporal: number;
}

/**
 * Starts a reading of CPU time: the bench process itself (`load`), the API processes, PostgreSQL, the Temporal
 * server and the machine. Calling what it returns with the number of requests or workflows served meanwhile gives
 * each per unit (undefined without /proc).
 */
function cpuReading(): (n: number) => CpuReading | undefined {
  const self0 = process.cpuUsage();
  const api0 = apiSeconds();
  const pg0 = processSeconds();
  const temporal0 = processSeconds('temporal');
  const machine0 = machineTicks();
  return (n) => {
    const machine = machineShare(machine0, machineTicks());
    const self = process.cpuUsage(self0);
    const api1 = apiSeconds();
    const pg1 = processSeconds();
    const temporal1 = processSeconds('temporal');
    if (!n || !pg0 || !pg1) return undefined;
    return {
      load: (self.user + self.system) / n,
      api: api0 !== undefined && api1 !== undefined ? ((api1 - api0) * 1e6) / n : 0,
      postgres: (secondsDelta(pg0, pg1) * 1e6) / n,
      temporal: temporal0 && temporal1 ? (secondsDelta(temporal0, temporal1) * 1e6) / n : 0,
      machine,
    };
  };
}

/** Where the CPU went while `run` served `count()` requests: the figures that bound a CPU-bound ratio. */
async function cpuAccount<T>(run: () => Promise<T>, count: (r: T) => number): Promise<[T, CpuAccount | undefined]> {
  const reading = cpuReading();
  const result = await run();
  return [result, reading(count(result))];
}

/**
 * With BENCH_PROFILE_DRAIN=dir, a CPU profile of the bench process's main thread (the worker's activities and
 * Temporal plumbing, the receiver) from now until the returned function is called, written to dir/<label>.cpuprofile.
 */
async function profileMain(label: string): Promise<() => Promise<void>> {
  const dir = process.env.BENCH_PROFILE_DRAIN;
  if (!dir) return async () => {};
  const session = new inspector.Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return async () => {
    const { profile } = await session.post('Profiler.stop');
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, `${label}.cpuprofile`), JSON.stringify(profile));
    session.disconnect();
  };
}

const workflowCpuLine = (c: CpuReading | undefined) =>
  c
    ? `  CPU per workflow     ${[c.load, c.temporal, c.postgres, c.api].map((x) => x.toFixed(0)).join(' / ')} µs ` +
      `(bench process: worker and receiver / Temporal server / PostgreSQL / API), total ` +
      `${(c.load + c.temporal + c.postgres + c.api).toFixed(0)} µs; machine idle ${c.machine?.idle.toFixed(0) ?? '?'}%\n`
    : '';

/** The API processes' pids, once started: their CPU time per request is read from /proc (Linux). */
let apiPids: number[] = [];

/** CPU seconds the API processes have used so far, together. */
function apiSeconds(): number | undefined {
  let total = 0;
  for (const pid of apiPids) {
    const seconds = cpuSeconds(pid);
    if (seconds === undefined) return undefined;
    total += seconds;
  }
  return apiPids.length ? total : undefined;
}

/** CPU seconds (user + system) a process has used so far, or undefined where /proc is not there. */
function cpuSeconds(pid: number | undefined): number | undefined {
  if (!pid) return undefined;
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}
/** Linux's USER_HZ, the unit of /proc/<pid>/stat times; 100 on every common build. */
const CLOCK_TICKS = 100;

function percentile(sorted: number[], p: number) {
  if (!sorted.length) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function httpLoad(
  base: string,
  connections: number,
  pathFor: () => string,
  method: 'GET' | 'POST',
  token: string,
): Promise<Stats> {
  const [result, account] = await cpuAccount(
    () =>
      autocannon({
        url: base,
        connections,
        duration: DURATION,
        headers: token ? { authorization: `Bearer ${token}` } : {},
        requests: [{ method, setupRequest: (req) => ({ ...req, path: pathFor() }) }],
      }),
    (r) => r.requests.total,
  );
  return {
    account,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.non2xx + result.errors,
    apiCpu: account && apiPids.length ? account.api : undefined,
  };
}

/**
 * The same statement the route runs (prepared, as the route prepares it), issued directly over a pool of
 * `connections` clients.
 */
async function raw(
  pool: pg.Pool,
  connections: number,
  name: string,
  text: string,
  paramsFor: () => unknown[],
  /** How to run it instead of one `pool.query` each: the API's coalesced path (src/db/coalesce.ts). */
  via?: (params: unknown[]) => Promise<unknown>,
): Promise<Stats> {
  const latencies: number[] = [];
  let errors = 0;
  const end = Date.now() + DURATION * 1000;
  const [, account] = await cpuAccount(
    () =>
      Promise.all(
        Array.from({ length: connections }, async () => {
          while (Date.now() < end) {
            const t0 = process.hrtime.bigint();
            try {
              await (via ? via(paramsFor()) : pool.query({ name, text, values: paramsFor() }));
            } catch {
              errors++;
            }
            latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
          }
        }),
      ),
    () => latencies.length,
  );
  latencies.sort((a, b) => a - b);
  return {
    rps: latencies.length / DURATION,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    errors,
    account,
  };
}

const fmt = (n: number, d = 1) => n.toFixed(d).padStart(9);
/** The middle value; with an even count, the mean of the two middle ones. */
function medianOf(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);

const machine = (m: CpuAccount['machine']) =>
  m ? [m.idle, m.irq, m.steal].map((x) => x.toFixed(0).padStart(5)).join(' ') : ''.padStart(17);

function cpuLine(name: string, c: number, h: CpuAccount, r: CpuAccount): string {
  const n = (x: number) => x.toFixed(0).padStart(7);
  const httpTotal = h.load + h.api + h.postgres;
  const rawTotal = r.load + r.postgres;
  return (
    `${name.padEnd(17)} ${String(c).padStart(5)} |${n(h.load)} ${n(h.api)} ${n(h.postgres)} ${n(httpTotal)} |` +
    `${n(r.load)} ${n(r.postgres)} ${n(rawTotal)} | ${((rawTotal / httpTotal) * 100).toFixed(0).padStart(9)}%  |` +
    `${machine(h.machine)} |${machine(r.machine)}\n`
  );
}
const cpu = (h: Stats) => (h.apiCpu === undefined ? '' : fmt(h.apiCpu, 0));

const DELIVERIES = Number(process.env.BENCH_DELIVERIES ?? 1000);
/**
 * Sections to run, comma-separated (all when unset): `hot` (usage add and effective access beside raw SQL),
 * `metering` (batch ingest beside raw, idempotent replay), `mcp`, `cancel`, `webhooks`, `analytics`, `billing`
 * (intents of the account actor: a quote, pause and resume round trips, a refusal; bench/billing.ts), `local` (checks
 * from memory, change to seen through another API process), `credits` (a credit-drawing usage add and ingest beside
 * raw; bench/credits.ts).
 */
const ONLY = (process.env.BENCH_ONLY ?? '')
  .split(',')
  .map((x) => x.trim())
  .filter(Boolean);
const want = (section: string) => ONLY.length === 0 || ONLY.includes(section);
const BATCH = Number(process.env.BENCH_BATCH ?? 500);
const BATCH_CLIENTS = 4;

/**
 * Metering: batch ingest (events/s through HTTP beside the same `usage_ingest` call over a plain pool,
 * BATCH events a batch, BATCH_CLIENTS batches in flight) and the replay of an idempotency key.
 */
async function meteringBench(
  base: string,
  pool: pg.Pool,
  app: { id: string; api_key: string; public_key: string },
  account: () => string,
) {
  let seq = 0;
  const batch = (prefix: string, pick: () => string, timestamp?: string) =>
    Array.from({ length: BATCH }, () => ({
      id: `${prefix}-${++seq}`,
      account: pick(),
      entitlement: 'api_calls',
      amount: 1,
      ...(timestamp ? { timestamp } : {}),
    }));
  // Sender c of `clients` draws from its own slice of the accounts (as a pipeline keyed by customer sends), or
  // every sender from all of them.
  const slice = (c: number, clients: number) => () => `acct-${Math.floor(((c + Math.random()) * ACCOUNTS) / clients)}`;
  const run = async (clients: number, send: (events: unknown[]) => Promise<boolean>, keyed = false, ageMs = 0) => {
    let events = 0;
    let errors = 0;
    const latencies: number[] = [];
    const end = Date.now() + DURATION * 1000;
    await Promise.all(
      Array.from({ length: clients }, async (_, c) => {
        while (Date.now() < end) {
          const b = batch(
            'bench',
            keyed ? slice(c, clients) : account,
            ageMs ? new Date(Date.now() - ageMs).toISOString() : undefined,
          );
          const t0 = process.hrtime.bigint();
          if (await send(b)) events += b.length;
          else errors++;
          latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
        }
      }),
    );
    latencies.sort((a, b) => a - b);
    return { eps: events / DURATION, p50: percentile(latencies, 50), errors };
  };
  const viaHttp = async (events: unknown[]) => {
    const r = await fetch(`${base}/apps/${app.id}/usage/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${app.api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ events }),
    });
    await r.text();
    return r.ok;
  };
  // The ceiling: the very database call the route makes, over a plain pool.
  const direct = (events: unknown[]) =>
    pool
      .query(INGEST_SQL, ingestParams(app.id, events as IngestEvent[]))
      .then(() => true)
      .catch(() => false);
  await run(BATCH_CLIENTS, viaHttp); // warm-up
  process.stdout.write(
    `\nBatch ingest: ${BATCH} events a batch over ${ACCOUNTS} accounts picked at random, ${DURATION} s per row\n` +
      'in flight                 HTTP events/s  batch p50 ms |  raw events/s  batch p50 ms |  HTTP/raw  errors\n',
  );
  // One batch at a time; BATCH_CLIENTS at once over all the accounts (their counters overlap, so each batch waits
  // for the one holding its first shared counter to commit); BATCH_CLIENTS at once, each over its own accounts; and
  // the same with events two hours old, after a roll-up run (each is then recorded as a late row for analytics).
  for (const [clients, keyed, ageMs] of [
    [1, false, 0],
    [BATCH_CLIENTS, false, 0],
    [BATCH_CLIENTS, true, 0],
    [BATCH_CLIENTS, true, 2 * 3_600_000],
  ] as const) {
    if (ageMs) await rollUpUsage(testEnv().deps);
    const h = await run(clients, viaHttp, keyed, ageMs);
    const r = await run(clients, direct, keyed, ageMs);
    const label = `${clients}${keyed ? ' by account' : ''}${ageMs ? ', 2 h old' : ''}`;
    process.stdout.write(
      `${label.padStart(21)} ${fmt(h.eps, 0)}      ${fmt(h.p50, 1)}    | ` +
        `${fmt(r.eps, 0)}     ${fmt(r.p50, 1)}    | ${fmt((h.eps / r.eps) * 100, 0)}%   ${h.errors + r.errors}\n`,
    );
  }

  const path = `/apps/${app.id}/namespaces/acct-1/usage/api_calls/add`;
  const first = await fetch(base + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${app.api_key}`, 'idempotency-key': 'bench-replay' },
  });
  await first.text();
  process.stdout.write('Idempotent replay (one key, POST .../add answered from the key):\n');
  for (const c of [1, 16]) {
    const result = await autocannon({
      url: base + path,
      connections: c,
      duration: DURATION,
      method: 'POST',
      headers: { authorization: `Bearer ${app.api_key}`, 'idempotency-key': 'bench-replay' },
    });
    process.stdout.write(
      `  ${String(c).padStart(3)} conns ${fmt(result.requests.average, 0)} req/s   p50 ${result.latency.p50} ms   ` +
        `errors ${result.non2xx + result.errors}\n`,
    );
  }
}

/**
 * Webhook deliveries: DELIVERIES events (plan creations through the API process, 16 at a time), one
 * endpoint on a local receiver answering 200. Latency = receiver's clock at arrival minus the event's
 * created_at (same machine). History length read from Temporal for a sample of deliveries.
 */
async function deliveryBench(
  base: string,
  app: { id: string; api_key: string },
  round: number,
): Promise<{ burst: number; drain: number }> {
  const arrivals = new Map<string, number>();
  let firstArrival = 0;
  let lastArrival = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const now = Date.now();
      arrivals.set(String(req.headers['webhook-id']), now);
      firstArrival ||= now;
      lastArrival = now;
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as net.AddressInfo).port;
  const auth = { authorization: `Bearer ${app.api_key}`, 'content-type': 'application/json' };
  const secret = new SecretClient({ secretKey: app.api_key, appId: app.id, baseUrl: base });
  const ep = await secret.webhooks.create({ url: `http://127.0.0.1:${port}/hook`, events: ['plan.created'] });
  const t0 = Date.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < DELIVERIES) {
        const i = next++;
        const r = await fetch(`${base}/apps/${app.id}/plans`, {
          method: 'POST',
          headers: auth,
          body: JSON.stringify({ id: `bench_${round}_${i}`, name: `Bench ${i}` }),
        });
        if (r.status !== 201) throw new Error(`plan create ${r.status}`);
      }
    }),
  );
  const produced = Date.now();
  while (arrivals.size < DELIVERIES && Date.now() - produced < 120_000) await new Promise((r) => setTimeout(r, 100));
  // Each delivery's event time comes from the event log.
  const pool = new pg.Pool({ connectionString: testEnv().config.databaseUrl, max: 2 });
  const rows = (
    await pool.query(
      `select d.id, d.event_id, d.attempts, e.created_at from webhook_deliveries d join events e on e.id = d.event_id
        where d.endpoint_id = $1`,
      [ep.id],
    )
  ).rows;
  await pool.end();
  const latencies = rows
    .filter((r) => arrivals.has(r.event_id) && r.attempts === 1)
    .map((r) => arrivals.get(r.event_id)! - new Date(r.created_at).getTime());
  latencies.sort((a, b) => a - b);
  const sample = rows.slice(0, 20);
  let historyEvents = 0;
  for (const r of sample)
    historyEvents += (await testEnv().deps.temporal.client.workflow.getHandle(r.id).fetchHistory()).events?.length ?? 0;
  const delivered = arrivals.size;
  const burstEnd = lastArrival;
  // Unloaded: one event at a time, waiting for each delivery, so the latency has no queue in it.
  const single: number[] = [];
  for (let i = 0; i < 50; i++) {
    const r = await fetch(`${base}/apps/${app.id}/plans`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ id: `single_${round}_${i}`, name: `Single ${i}` }),
    });
    const created = Date.parse(((await r.json()) as { created_at: string }).created_at);
    const before = arrivals.size;
    while (arrivals.size === before) await new Promise((res) => setTimeout(res, 2));
    single.push(lastArrival - created);
  }
  single.sort((a, b) => a - b);

  // Drain: the same number of events produced while no worker runs (the outbox starts their workflows, which
  // wait in the task queue), then the worker starts: deliveries per second from its start to the last 2xx, with
  // nothing else running. The baseline is drained the same way, so this compares what the server and the worker
  // do per delivery with what they do per trivial workflow.
  await testEnv().stopWorker();
  const before = arrivals.size;
  await Promise.all(
    Array.from({ length: 16 }, async (_, w) => {
      for (let i = w; i < DELIVERIES; i += 16) {
        const r = await fetch(`${base}/apps/${app.id}/plans`, {
          method: 'POST',
          headers: auth,
          body: JSON.stringify({ id: `drain_${round}_${i}`, name: `Drain ${i}` }),
        });
        if (r.status !== 201) throw new Error(`plan create ${r.status}`);
      }
    }),
  );
  const outbox = new pg.Pool({ connectionString: testEnv().config.databaseUrl, max: 1 });
  for (let i = 0; i < 1200; i++) {
    const { rows: left } = await outbox.query<{ n: string }>('select count(*) as n from outbox');
    if (Number(left[0].n) === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  await outbox.end();
  const drainStart = Date.now();
  const drainCpu = cpuReading();
  const stopProfile = await profileMain(`deliveries-drain-${round + 1}`);
  await testEnv().startWorker();
  while (arrivals.size < before + DELIVERIES && Date.now() - drainStart < 120_000)
    await new Promise((r) => setTimeout(r, 20));
  const drained = arrivals.size - before;
  const cpuPerDelivery = drainCpu(drained);
  await stopProfile();
  const drainRate = drained / ((lastArrival - drainStart) / 1000);
  // The next round's endpoint is the only one subscribed.
  await secret.webhooks.delete(ep.id);
  server.close();
  process.stdout.write(
    `\nWebhook deliveries (round ${round + 1}): ${DELIVERIES} events (plan.created), one endpoint on a local receiver answering 200\n` +
      `  delivered            ${delivered} of ${DELIVERIES} (all on attempt 1: ${latencies.length === DELIVERIES})\n` +
      `  events produced in   ${((produced - t0) / 1000).toFixed(1)} s ` +
      `(${(DELIVERIES / ((produced - t0) / 1000)).toFixed(0)}/s through the API)\n` +
      `  throughput           ${(delivered / ((burstEnd - t0) / 1000)).toFixed(0)} deliveries/s ` +
      `(first event to last 2xx: ${((burstEnd - t0) / 1000).toFixed(1)} s)\n` +
      `  first attempt        p50 ${percentile(latencies, 50).toFixed(0)} ms, p99 ${percentile(latencies, 99).toFixed(0)} ms ` +
      `(event committed to receiver, during the burst)\n` +
      `  one at a time        p50 ${percentile(single, 50).toFixed(0)} ms, p99 ${percentile(single, 99).toFixed(0)} ms ` +
      `(50 events, no backlog)\n` +
      `  Temporal history     ${(historyEvents / sample.length).toFixed(1)} events per successful delivery ` +
      `(mean of ${sample.length})\n` +
      `  drain                ${drained} of ${DELIVERIES} queued deliveries at ${drainRate.toFixed(0)}/s ` +
      `(their workflows started while no worker ran; from the worker's start to the last 2xx)\n` +
      workflowCpuLine(cpuPerDelivery),
  );
  return { burst: delivered / ((burstEnd - t0) / 1000), drain: drainRate };
}

/**
 * The baseline for webhook deliveries: the same Temporal server running DELIVERIES instances of a trivial
 * workflow with one no-op local activity (bench/baseline/workflow.ts), on a worker of its own with the
 * service worker's settings, started as the outbox starts deliveries (client.workflow.start, 32 at a time).
 * Returns a runner: one bundle and connection, a round at a time.
 */
async function temporalBaseline() {
  const done = new Map<number, number>();
  const taskQueue = `bench-baseline-${process.pid}`;
  const connection = await NativeConnection.connect({ address: testEnv().config.temporalAddress });
  const workflowBundle = await bundleWorkflowCode({
    workflowsPath: path.join(root, 'bench', 'baseline', 'workflow.ts'),
    logger: { debug() {}, info() {}, warn() {}, error() {}, trace() {}, log() {} } as never,
  });
  const newWorker = (queue: string) =>
    Worker.create({
      connection,
      namespace: testEnv().config.TEMPORAL_NAMESPACE,
      taskQueue: queue,
      workflowBundle,
      activities: {
        touch: async (i: number) => {
          done.set(i, Date.now());
        },
      },
      shutdownGraceTime: '10s',
    });
  const worker = await newWorker(taskQueue);
  const running = worker.run();
  const client = testEnv().deps.temporal.client;
  const run = Date.now().toString(36);
  // Warm-up: the worker's first workflow tasks create its sandbox.
  await client.workflow.execute(baselineWorkflow, { taskQueue, workflowId: `bench-baseline-${run}-warm`, args: [-1] });
  const startAll = async (queue: string, from: number) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < DELIVERIES) {
          const i = from + next++;
          await client.workflow.start(baselineWorkflow, {
            taskQueue: queue,
            workflowId: `bench-baseline-${run}-${i}`,
            args: [i],
          });
        }
      }),
    );
  };
  const waitFor = async (from: number, t0: number) => {
    const finished = () => [...done.keys()].filter((k) => k >= from && k < from + DELIVERIES);
    while (finished().length < DELIVERIES && Date.now() - t0 < 120_000) await new Promise((r) => setTimeout(r, 20));
    const keys = finished();
    return { completed: keys.length, rate: keys.length / ((Math.max(...keys.map((k) => done.get(k)!)) - t0) / 1000) };
  };
  return {
    async round(round: number): Promise<{ burst: number; drain: number }> {
      // Burst: started 32 at a time while the worker runs.
      const from = 2 * round * DELIVERIES;
      const t0 = Date.now();
      await startAll(taskQueue, from);
      const burst = await waitFor(from, t0);
      // Drained: DELIVERIES workflows started on a queue no worker polls yet, then a worker of its own starts.
      const drainQueue = `${taskQueue}-drain-${round}`;
      await startAll(drainQueue, from + DELIVERIES);
      const drainStart = Date.now();
      const drainCpu = cpuReading();
      const stopProfile = await profileMain(`baseline-drain-${round + 1}`);
      const drainWorker = await newWorker(drainQueue);
      const drainRunning = drainWorker.run();
      const drain = await waitFor(from + DELIVERIES, drainStart);
      const cpuPerWorkflow = drainCpu(drain.completed);
      await stopProfile();
      drainWorker.shutdown();
      await drainRunning;
      process.stdout.write(
        `\nTemporal baseline (round ${round + 1}): ${DELIVERIES} trivial workflows (one no-op local activity), same ` +
          `server, 32 starts at a time\n` +
          `  completed            ${burst.completed} of ${DELIVERIES}\n` +
          `  throughput           ${burst.rate.toFixed(0)} workflows/s\n` +
          `  drain                ${drain.rate.toFixed(0)} workflows/s (${drain.completed} of ${DELIVERIES} started ` +
          `while no worker ran; from the worker's start to the last completion)\n` +
          workflowCpuLine(cpuPerWorkflow),
      );
      return { burst: burst.rate, drain: drain.rate };
    },
    async close() {
      worker.shutdown();
      await running;
      await connection.close();
    },
  };
}

/**
 * Webhook deliveries beside the baseline, BENCH_ROUNDS rounds. The two alternate which goes first (deliveries
 * then baseline, baseline then deliveries, ...): the Temporal server slows as its in-memory store grows, by a
 * fifth or more over a round here, so whichever ran second would lose. Over an even number of rounds that drift
 * cancels in the ratio of the mean rates, which is the headline.
 */
async function webhookBench(base: string, app: { id: string; api_key: string }) {
  const baseline = await temporalBaseline();
  const pct = (x: number) => `${(x * 100).toFixed(0)}%`;
  const d: { burst: number; drain: number }[] = [];
  const b: { burst: number; drain: number }[] = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      if (round % 2 === 0) {
        d.push(await deliveryBench(base, app, round));
        b.push(await baseline.round(round));
      } else {
        b.push(await baseline.round(round));
        d.push(await deliveryBench(base, app, round));
      }
      const [dr, br] = [d[round], b[round]];
      process.stdout.write(
        `  webhook deliveries   burst ${dr.burst.toFixed(0)}/s = ${pct(dr.burst / br.burst)} of the baseline; ` +
          `drain ${dr.drain.toFixed(0)}/s = ${pct(dr.drain / br.drain)} of the baseline's drain (round ${round + 1})\n`,
      );
    }
    if (ROUNDS > 1) {
      const mean = (xs: number[]) => xs.reduce((x, y) => x + y, 0) / xs.length;
      const ratio = (k: 'burst' | 'drain') => mean(d.map((x) => x[k])) / mean(b.map((x) => x[k]));
      process.stdout.write(
        `\nWebhook deliveries against the baseline, mean rates over ${ROUNDS} rounds` +
          `${ROUNDS % 2 ? ' (an odd count: the drift does not cancel)' : ''}: burst ${pct(ratio('burst'))}, ` +
          `drain ${pct(ratio('drain'))}\n`,
      );
    }
  } finally {
    await baseline.close();
  }
}

/**
 * The MCP door beside the REST door onto the same handler: `tools/call get_account_access` (one JSON-RPC request,
 * stateless, logged) against GET /plan with the secret key, the call once with the secret key and once with an OAuth
 * access token (issue 43: within 1.2x of the key at p50), under 2025-11-25 and 2026-07-28 (the `_meta` envelope and
 * the Mcp-Method/Mcp-Name headers; the v2 SDK's handler). BENCH_ROUNDS rounds per connection count, the doors in
 * turn (the order rotating each round); with more than one round, the median of each door's p50 ratio. The OAuth
 * calls go round BENCH_MCP_TOKENS connections (64), each with its own token, so none passes the per-connection
 * request rate (RATE_LIMIT_PER_SECOND, 100 a second in each API process) and the shipped limiter still runs.
 * BENCH_MCP_CONNECTIONS picks the counts (1,16); BENCH_MCP_DOORS the doors (all).
 */
async function mcpBench(base: string, app: { id: string; api_key: string; public_key: string }, account: () => string) {
  process.stdout.write(
    `\nMCP tools/call vs the REST route it wraps (effective access), ${DURATION} s per cell, ${ROUNDS} round(s):\n`,
  );
  process.stdout.write(
    'door                          conns      req/s   p50 ms   p99 ms  errors  API µs/req  PG µs/req  /REST p50  /key p50\n',
  );
  let id = 0;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const keyHeaders = { authorization: `Bearer ${app.api_key}` };
  const tokens = await oauthTokens(base, app.id, Number(process.env.BENCH_MCP_TOKENS ?? 64));
  let turn = 0;
  const token = () => tokens[turn++ % tokens.length];
  // Both doors through the same client (node's http, keep-alive, each request one write), timed to the microsecond:
  // autocannon reports whole milliseconds, too coarse for a route answered in one.
  const rest = (c: number) =>
    loop(c, () => ({ method: 'GET', path: `/apps/${app.id}/namespaces/${account()}/plan`, headers: keyHeaders }));
  const META = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
    'io.modelcontextprotocol/clientCapabilities': {},
  };
  const mcp = (version: '2025-11-25' | '2026-07-28', credential: () => string) => (c: number) =>
    loop(c, () => ({
      method: 'POST',
      path: `/apps/${app.id}/mcp`,
      headers: {
        authorization: `Bearer ${credential()}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': version,
        ...(version === '2026-07-28' ? { 'mcp-method': 'tools/call', 'mcp-name': 'get_account_access' } : {}),
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: ++id,
        method: 'tools/call',
        params: {
          name: 'get_account_access',
          arguments: { namespaceId: account() },
          ...(version === '2026-07-28' ? { _meta: META } : {}),
        },
      }),
    }));
  const all: { name: string; run: (c: number) => Promise<Stats>; key?: string }[] = [
    { name: 'REST GET /plan', run: rest },
    { name: 'MCP 2025-11-25 key', run: mcp('2025-11-25', () => app.api_key) },
    { name: 'MCP 2025-11-25 OAuth', run: mcp('2025-11-25', token), key: 'MCP 2025-11-25 key' },
    { name: 'MCP 2026-07-28 key', run: mcp('2026-07-28', () => app.api_key) },
    { name: 'MCP 2026-07-28 OAuth', run: mcp('2026-07-28', token), key: 'MCP 2026-07-28 key' },
  ];
  const picked = (process.env.BENCH_MCP_DOORS ?? '').split(',').filter(Boolean);
  const doors = all.filter((d, i) => i === 0 || picked.length === 0 || picked.some((p) => d.name.includes(p)));
  const url = new URL(base);
  async function loop(
    c: number,
    next: () => { method: string; path: string; headers: Record<string, string>; body?: string },
  ): Promise<Stats> {
    const latencies: number[] = [];
    let errors = 0;
    const end = Date.now() + DURATION * 1000;
    const one = (r: ReturnType<typeof next>) =>
      new Promise<number>((resolve, reject) => {
        const req = http.request(
          { agent, host: url.hostname, port: url.port, method: r.method, path: r.path, headers: r.headers },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          },
        );
        req.on('error', reject);
        req.end(r.body);
      });
    const [, account] = await cpuAccount(
      () =>
        Promise.all(
          Array.from({ length: c }, async () => {
            while (Date.now() < end) {
              const t0 = process.hrtime.bigint();
              const status = await one(next()).catch(() => 0);
              if (status !== 200) errors++;
              latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
            }
          }),
        ),
      () => latencies.length,
    );
    latencies.sort((a, b) => a - b);
    return {
      rps: latencies.length / DURATION,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      errors,
      account,
    };
  }
  // Warm-up of every door (JIT, pools, the credential cache with every token's check) before anything is counted.
  for (const d of doors) await d.run(4);
  for (const t of tokens) {
    const r = await fetch(`${base}/apps/${app.id}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t}`, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'tools/call', params: { name: 'get_app', arguments: {} } }),
    });
    if (r.status !== 200) throw new Error(`an OAuth token was refused: ${r.status} ${await r.text()}`);
  }
  const counts = (process.env.BENCH_MCP_CONNECTIONS ?? '1,16').split(',').map(Number);
  for (const c of counts) {
    const ratios = new Map<string, { rest: number[]; key: number[] }>();
    for (let round = 0; round < ROUNDS; round++) {
      const cells = new Map<string, Stats>();
      // The doors in turn, starting one further each round, so drift over a round does not favour a door.
      for (let i = 0; i < doors.length; i++) {
        const d = doors[(i + round) % doors.length];
        cells.set(d.name, await d.run(c));
      }
      const restP50 = cells.get('REST GET /plan')!.p50;
      for (const d of doors) {
        const r = cells.get(d.name)!;
        const toRest = r.p50 / restP50;
        const keyCell = d.key ? cells.get(d.key) : undefined;
        const toKey = keyCell ? r.p50 / keyCell.p50 : NaN;
        const kept = ratios.get(d.name) ?? { rest: [], key: [] };
        kept.rest.push(toRest);
        if (keyCell) kept.key.push(toKey);
        ratios.set(d.name, kept);
        process.stdout.write(
          `${d.name.padEnd(28)} ${String(c).padStart(6)} ${fmt(r.rps, 0)} ${fmt(r.p50, 2)} ${fmt(r.p99, 2)}  ` +
            `${String(r.errors).padEnd(6)}${fmt(r.account?.api ?? NaN, 0)}  ${fmt(r.account?.postgres ?? NaN, 0)}` +
            `   ${d.name.startsWith('MCP') ? fmt(toRest, 2) : '         '}` +
            `  ${keyCell ? fmt(toKey, 2) : ''}\n`,
        );
      }
    }
    if (ROUNDS > 1)
      for (const d of doors.filter((x) => x.name.startsWith('MCP'))) {
        const r = ratios.get(d.name)!;
        process.stdout.write(
          `${`${c} conns, median ${d.name}`.padEnd(90)}${fmt(medianOf(r.rest), 2)}` +
            `  ${r.key.length ? fmt(medianOf(r.key), 2) : ''}\n`,
        );
      }
  }
}

/**
 * OAuth access tokens for the MCP bench: one client registered, `count` connections (one per person, as many people
 * approving one assistant would make), each with a token pair issued as the token endpoint issues it, for the bench
 * API's server URL.
 */
async function oauthTokens(base: string, appId: string, count: number): Promise<string[]> {
  const registered = await fetch(`${base}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ redirect_uris: ['http://127.0.0.1:33418/callback'], client_name: 'bench' }),
  });
  if (registered.status !== 201) throw new Error(`register failed: ${await registered.text()}`);
  const { client_id: clientId } = (await registered.json()) as { client_id: string };
  const em = testEnv().deps.orm.em.fork();
  const tokens: string[] = [];
  for (let i = 0; i < count; i++) {
    const connectionId = newConnectionId();
    await sql(
      em,
      `insert into mcp_connections (id, app_id, kind, name, client_id, user_id, user_name, access_level, person)
       values ($1, $2, 'oauth', 'bench', $3, $4, $4, 'read', false)`,
      [connectionId, appId, clientId, `bench_user_${i}`],
    );
    const pair = await issueTokenPair(em, connectionId, {
      familyId: newFamilyId(),
      audience: mcpResourceUrl(base, appId),
    });
    tokens.push(pair.access);
  }
  return tokens;
}

/**
 * Cancel sessions as a customer's browser drives them with an account token: start, answer the
 * reason (which picks a static incentive offer), decline it, close. Per-call latency and walks/s.
 */
async function cancelSessionBench(base: string, app: { id: string; api_key: string }) {
  // Through the SDK, as a product would: the secret key on the server, account tokens in the browser.
  const secret = new SecretClient({ secretKey: app.api_key, appId: app.id, baseUrl: base });
  await secret.incentives.create({ id: 'partner', name: 'Partner deal' });
  await secret.cancelFlows.create({
    status: 'active',
    steps: [
      {
        id: 'reason',
        type: 'question',
        title: 'Why?',
        answers: [
          { id: 'price', label: 'Price' },
          { id: 'other', label: 'Other' },
        ],
      },
      {
        id: 'offer',
        type: 'offer',
        title: 'Stay?',
        decline_label: 'No',
        offers: [{ kind: 'incentive', incentive: 'partner', months: 1 }],
      },
      { id: 'confirm', type: 'confirm', title: 'Sure?' },
    ],
  });
  const browsers = await Promise.all(
    Array.from({ length: 100 }, async (_, i) => {
      const { token } = await secret.accounts.createToken(`acct-${i}`, {});
      return new AccountTokenClient({ accountToken: token, baseUrl: base, maxRetries: 0 });
    }),
  );
  process.stdout.write(
    `\nCancel sessions (account token; start, answer, decline, close = 4 calls per walk), ${DURATION} s per row:\n`,
  );
  process.stdout.write('walkers   walks/s   calls/s   p50 ms   p99 ms  errors\n');
  for (const walkers of [1, 16]) {
    const latencies: number[] = [];
    let walks = 0;
    let errors = 0;
    const end = Date.now() + DURATION * 1000;
    await Promise.all(
      Array.from({ length: walkers }, async (_, w) => {
        const sessions = browsers[w % browsers.length].cancelSessions;
        const timed = async <T>(call: () => Promise<T>): Promise<T> => {
          const t0 = process.hrtime.bigint();
          try {
            return await call();
          } catch (err) {
            errors++;
            throw err;
          } finally {
            latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
          }
        };
        while (Date.now() < end) {
          const s = await timed(() => sessions.start({}));
          await timed(() => sessions.answer(s.id, { step: 'reason', answer: 'price' }));
          await timed(() => sessions.decline(s.id));
          await timed(() => sessions.close(s.id));
          walks++;
        }
      }),
    );
    latencies.sort((a, b) => a - b);
    process.stdout.write(
      `${String(walkers).padStart(7)} ${fmt(walks / DURATION, 1)} ${fmt(latencies.length / DURATION, 0)} ` +
        `${fmt(percentile(latencies, 50), 2)} ${fmt(percentile(latencies, 99), 2)}  ${errors}\n`,
    );
  }
}

/**
 * Analytics over ANALYTICS_ROWS usage rows (one app, 1,000 accounts, 2 entitlements, over 400 days), loaded
 * with one set-based statement as history the roll-up has not reached (a fresh import of a year). Each query is timed
 * three ways: the history read whole through the service (no roll-up, no statement bound: what a request would cost),
 * through HTTP on the shipped defaults before the roll-up (a window past ANALYTICS_UNROLLED_ROWS_MAX answers at once,
 * 503 with Retry-After, and starts the app's roll-up), and through HTTP once that roll-up has run.
 */
async function analyticsBench(base: string, pool: pg.Pool) {
  // An app of its own: the other sections' usage (hundreds of thousands of rows dated today) would otherwise land in
  // the raw part of every window, and the figures would depend on which sections ran first.
  const app = await createTestApp('analytics');
  await seedCatalog(app);
  process.stdout.write(
    `\nAnalytics over ${ANALYTICS_ROWS.toLocaleString('en-US')} usage rows ` +
      '(one app of its own, 1,000 accounts, 2 entitlements, spread over 400 days):\n',
  );
  const t0 = Date.now();
  const client = await pool.connect();
  try {
    await client.query('begin');
    // Loaded as old history, straight into the table: the late-row trigger is off for the load (it would take
    // the app's roll-up row once per row), and the app's roll-up starts from scratch, so the run below rolls
    // all of it up.
    await client.query('alter table usage_events disable trigger usage_events_late');
    // Building the history's secondary indexes once after the load is far quicker than row by row.
    const indexes = (
      await client.query<{ name: string; def: string }>(
        `select indexname as name, indexdef as def from pg_indexes
          where schemaname = current_schema() and tablename = 'usage_events' and indexname <> 'usage_events_pkey'`,
      )
    ).rows;
    for (const i of indexes) await client.query(`drop index ${i.name}`);
    await client.query(
      `insert into usage_events (app_id, account_id, entitlement_id, amount, count, created_at)
       select $1, 'acct-' || (g % 1000), case when g % 5 = 0 then 'seats' else 'api_calls' end, 1 + g % 3, null,
              now() - make_interval(secs => (g::double precision / $2) * 400 * 86400)
         from generate_series(1, $2) g`,
      [app.id, ANALYTICS_ROWS],
    );
    await client.query(`set local maintenance_work_mem = '512MB'`);
    // BENCH_ANALYTICS_TODAY more rows dated today, from midnight UTC to now (a busy day for the roll-up of hours).
    if (ANALYTICS_TODAY > 0)
      await client.query(
        `insert into usage_events (app_id, account_id, entitlement_id, amount, count, created_at)
         select $1, 'acct-' || (g % 1000), case when g % 5 = 0 then 'seats' else 'api_calls' end, 1 + g % 3, null,
                date_trunc('day', now() at time zone 'UTC') at time zone 'UTC'
                  + (now() - date_trunc('day', now() at time zone 'UTC') at time zone 'UTC') * (g::double precision / $2)
           from generate_series(1, $2) g`,
        [app.id, ANALYTICS_TODAY],
      );
    for (const i of indexes) await client.query(i.def);
    await client.query('alter table usage_events enable trigger usage_events_late');
    for (const table of ['usage_daily', 'usage_daily_app', 'usage_rollup_late'])
      await client.query(`delete from ${table} where app_id = $1`, [app.id]);
    await client.query(`update usage_rollups set through = '-infinity' where app_id = $1`, [app.id]);
    await client.query('commit');
  } catch (err) {
    await client.query('rollback');
    throw err;
  } finally {
    client.release();
  }
  await pool.query('vacuum analyze usage_events');
  // The roll-up holds closed days and the current day's closed hours: say how many rows are dated today, and (below)
  // how many the queries still read from the history itself.
  const today = await pool.query<{ n: string }>(
    `select count(*) as n from usage_events
      where app_id = $1 and created_at >= date_trunc('day', now() at time zone 'UTC') at time zone 'UTC'`,
    [app.id],
  );
  process.stdout.write(
    `  (loaded in ${((Date.now() - t0) / 1000).toFixed(1)} s; ${Number(today.rows[0].n).toLocaleString('en-US')} ` +
      'of the rows are dated today, UTC)\n',
  );
  // Each query through HTTP (timed), and through the service with the window's end pinned, so the answers
  // before and after the roll-up can be compared exactly (through HTTP the window moves with the clock). The service
  // calls read whatever the size (`anySize`): the bench compares them, it does not answer a request.
  const ctx = async (): Promise<Ctx> => {
    const em = testEnv().deps.orm.em.fork();
    return { em, deps: testEnv().deps, app: (await loadApp(em, app.id))! };
  };
  const a = `/apps/${app.id}/analytics`;
  const queries: [string, string, ((at: Date, c: Ctx) => Promise<unknown>) | null][] = [
    ['summary 30d', `${a}?interval=30d`, (at, c) => analytics.summary(c, { interval: '30d' }, at, true)],
    ['summary alltime', `${a}?interval=alltime`, (at, c) => analytics.summary(c, { interval: 'alltime' }, at, true)],
    [
      'summary 30d, one account',
      `${a}?interval=30d&namespace=acct-7`,
      (at, c) => analytics.summary(c, { interval: '30d', namespace: 'acct-7' }, at, true),
    ],
    [
      'top accounts 30d',
      `${a}/top-namespaces?interval=30d&limit=10`,
      (at, c) => analytics.topAccounts(c, { interval: '30d', limit: 10 }, at, true),
    ],
    [
      'top accounts year',
      `${a}/top-namespaces?interval=year&limit=10`,
      (at, c) => analytics.topAccounts(c, { interval: 'year', limit: 10 }, at, true),
    ],
    [
      'timeseries 60d',
      `${a}/timeseries?interval=60d`,
      (at, c) => analytics.timeseries(c, { interval: '60d' }, at, true),
    ],
    [
      'timeseries year',
      `${a}/timeseries?interval=year&entitlement=api_calls`,
      (at, c) => analytics.timeseries(c, { interval: 'year', entitlement: 'api_calls' }, at, true),
    ],
    [
      'timeseries year, one account',
      `${a}/timeseries?interval=year&namespace=acct-7`,
      (at, c) => analytics.timeseries(c, { interval: 'year', namespace: 'acct-7' }, at, true),
    ],
    ['events (latest 50)', `${a}/events?namespace=acct-7`, null],
  ];
  const at = new Date();
  // The history read as it is, without the roll-up and without a request's statement bound (what a request would
  // cost if it did), through the service with the window's end pinned: also the answer the roll-up must give again.
  const raw = async (pinned: (at: Date, c: Ctx) => Promise<unknown>) => {
    const em = testEnv().deps.orm.em.fork();
    return em.transactional(async (t) => {
      await longStatements(t);
      const c: Ctx = { em: t, deps: testEnv().deps, app: (await loadApp(t, app.id))! };
      const s0 = process.hrtime.bigint();
      const answer = JSON.stringify(await pinned(at, c));
      return { ms: Number(process.hrtime.bigint() - s0) / 1e6, answer };
    });
  };
  const history: { ms: number; answer: string }[] = [];
  for (const [, , pinned] of queries) history.push(pinned ? await raw(pinned) : { ms: NaN, answer: '' });
  // Through HTTP on the shipped defaults: a window that would read more history than the roll-up has reached answers
  // at once, 503 with Retry-After (and starts the app's roll-up); the others answer from the history.
  const http = async () => {
    const out: { median: number; status: number; retryAfter: number | null; body: string }[] = [];
    for (const [, url] of queries) {
      const times: number[] = [];
      let last = { status: 0, retryAfter: null as number | null, body: '' };
      for (let i = 0; i < 5; i++) {
        const s0 = process.hrtime.bigint();
        const res = await fetch(base + url, { headers: { authorization: `Bearer ${app.api_key}` } });
        const body = await res.text();
        times.push(Number(process.hrtime.bigint() - s0) / 1e6);
        const ra = res.headers.get('retry-after');
        last = { status: res.status, retryAfter: ra === null ? null : Number(ra), body };
      }
      times.sort((x, y) => x - y);
      out.push({ median: times[2], ...last });
    }
    return out;
  };
  const refusedAt = Date.now();
  const before = await http();
  const refused = before.filter((b) => b.status === 503);
  const unexpected = before.find((b) => b.status !== 200 && b.status !== 503);
  if (unexpected) throw new Error(`analytics before the roll-up: ${unexpected.status} ${unexpected.body}`);
  // The roll-up: the app's own run, started by the first refusal (its Retry-After said when it would be done), or a
  // run called here when nothing was refused (a smaller history).
  const r0 = Date.now();
  let rollup: string;
  if (refused.length) {
    const run = testEnv().deps.temporal.client.workflow.getHandle(usageRollupAppWorkflowId(app.id));
    const result = (await run.result().catch((err: { cause?: { cause?: Error } }) => {
      throw new Error(`the app's roll-up failed: ${err.cause?.cause?.message ?? String(err)}`, { cause: err });
    })) as { days: number; rolledTo?: string };
    const said = Math.max(...refused.map((b) => b.retryAfter ?? 0));
    rollup =
      `the app's own run, started by the first 503: ${result.days} days and the hours before ${result.rolledTo}, ` +
      `done ${((Date.now() - refusedAt) / 1000).toFixed(1)} s after the first 503, whose Retry-After said ${said} s`;
  } else {
    const rolled = await rollUpUsage(testEnv().deps, { budgetMs: 60 * 60_000 });
    rollup = `a run over the whole history: ${rolled.days} days and the hours before ${rolled.rolledTo} in ${(
      (Date.now() - r0) /
      1000
    ).toFixed(1)} s`;
  }
  await pool.query('vacuum analyze usage_daily, usage_daily_app');
  const after = await http();
  const failed = after.find((b) => b.status !== 200);
  if (failed) throw new Error(`analytics after the roll-up: ${failed.status} ${failed.body}`);
  const pinnedAfter: string[] = [];
  for (const [, , pinned] of queries) pinnedAfter.push(pinned ? JSON.stringify(await pinned(at, await ctx())) : '');
  const rawRows = await pool.query<{ n: string }>(
    `select count(*) as n from usage_events u join usage_rollups r on r.app_id = u.app_id
      where u.app_id = $1 and u.created_at >= usage_rolled_to(r.through, r.rolled_to)`,
    [app.id],
  );
  process.stdout.write(
    `  roll-up: ${rollup}; ${Number(rawRows.rows[0].n).toLocaleString('en-US')} rows after it are read raw\n` +
      '  query (median of 5)                history read whole   HTTP before the roll-up        HTTP with roll-up' +
      '   same answer (window end pinned)\n',
  );
  queries.forEach(([name, , pinned], i) => {
    const b = before[i];
    const was =
      b.status === 503 ? `  503 in ${b.median.toFixed(1)} ms, Retry-After ${b.retryAfter}` : `${fmt(b.median, 1)} ms`;
    process.stdout.write(
      `  ${name.padEnd(34)} ${pinned ? `${fmt(history[i].ms, 1)} ms` : '        -   '}   ${was.padEnd(32)}` +
        `${fmt(after[i].median, 1)} ms   ${pinned ? (history[i].answer === pinnedAfter[i] ? 'yes' : 'NO') : '-'}\n`,
    );
  });
}

async function main() {
  // --markdown: each section that runs rewrites its block of docs/benchmarks.md (bench/markdown.ts).
  const markdown = markdownTarget(process.argv.slice(2), process.env, root);
  const recorder = markdown ? sectionRecorder(root) : undefined;
  const measure = async (section: string, run: () => Promise<unknown>) => {
    if (!want(section)) return;
    recorder?.begin(section);
    await run();
    recorder?.end();
  };
  process.stdout.write('starting servers...\n');
  const env = await startTestEnv();
  const port = await freePort();
  const profile = process.env.BENCH_PROFILE ? [`--cpu-prof`, `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];
  // BENCH_API_PROCESSES=2: that many API processes share the port (API_REUSE_PORT), as one per core would.
  const apis = Array.from({ length: API_PROCESSES }, () =>
    spawn(process.execPath, [...profile, '--import', 'tsx', 'src/api.ts'], {
      cwd: root,
      env: {
        PATH: process.env.PATH ?? '',
        DB_COALESCE_IN_FLIGHT: String(COALESCE_IN_FLIGHT),
        API_REUSE_PORT: String(API_PROCESSES > 1),
        HOME: process.env.HOME ?? '',
        NODE_ENV: 'production',
        LOG_LEVEL: 'warn',
        DATABASE_URL: env.config.databaseUrl,
        TEMPORAL_ADDRESS: env.config.temporalAddress,
        TEMPORAL_TASK_QUEUE: env.config.TEMPORAL_TASK_QUEUE,
        ADMIN_API_KEY: env.adminKey,
        WEBHOOKS_ALLOW_PRIVATE_URLS: 'true',
        // The billing section's intents reach the test servers' PayPal stand-in.
        PAYPAL_BASE_URL: env.paypal.baseUrl,
        HOST: '127.0.0.1',
        PORT: String(port),
        // The shipped defaults: the secret key is not rate limited, and a valid key reads no throttle state.
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    }),
  );
  apiPids = apis.map((a) => a.pid!).filter(Boolean);
  const base = `http://127.0.0.1:${port}`;
  const pool = new pg.Pool({ connectionString: env.config.databaseUrl, max: Math.max(...CONNECTIONS) });
  try {
    for (let i = 0; ; i++) {
      const ok = await fetch(`${base}/health`)
        .then((r) => r.ok)
        .catch(() => false);
      if (ok) break;
      if (i > 1200) throw new Error('API did not start within 2 minutes');
      await new Promise((r) => setTimeout(r, 100));
    }
    // The first process to listen answered; give the others (migrations checked, port bound) time to join.
    if (API_PROCESSES > 1) await new Promise((r) => setTimeout(r, 5000));
    const app = await createTestApp('bench');
    await seedCatalog(app);
    const accounts = Array.from({ length: ACCOUNTS }, (_, i) => ({ id: `acct-${i}`, plan: 'scale' }));
    const imported = await fetch(`${testEnv().baseUrl}/apps/${app.id}/import`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ accounts }),
    });
    if (imported.status !== 201) throw new Error(`seed failed: ${await imported.text()}`);
    // Statistics for the freshly seeded tables, as autovacuum would gather within a minute in service.
    await pool.query('analyze');
    const account = () => `acct-${Math.floor(Math.random() * ACCOUNTS)}`;

    const usageParams = () => [
      ...[app.id, account(), 'api_calls', 1, 'evt_bench_w', 'evt_bench_r', null, null, null],
      ...['evt_bench_c', null, 'grt_bench'], // CHANGE_SQL's credits parameters (a feature that draws nothing)
    ];
    // The raw loop's coalesced runs, as the API process has them.
    setCoalesceInFlight(COALESCE_IN_FLIGHT);
    const scenarios = [
      {
        name: 'usage add',
        http: (c: number) =>
          httpLoad(
            base,
            c,
            () => `/apps/${app.id}/namespaces/${account()}/usage/api_calls/add`,
            'POST',
            // A backend's call on its own user's request: the secret key (the publishable key is a browser's, held
            // to 100 requests a second per client address).
            app.api_key,
          ),
        raw: (c: number, via?: boolean) =>
          raw(pool, c, 'usage_change', CHANGE_SQL, usageParams, via ? (p) => change.onPool(pool, p) : undefined),
      },
      {
        name: 'effective access',
        http: (c: number) =>
          httpLoad(base, c, () => `/apps/${app.id}/namespaces/${account()}/plan`, 'GET', app.api_key),
        raw: (c: number, via?: boolean) =>
          raw(
            pool,
            c,
            'effective_access',
            EFFECTIVE_ACCESS_SQL,
            () => [app.id, account()],
            via ? (p) => access.onPool(pool, p) : undefined,
          ),
      },
    ];

    await measure('hot', async () => {
      process.stdout.write(
        `\nHot paths: ${DURATION} s per cell, ${ACCOUNTS} accounts picked at random, API process LOG_LEVEL=warn, ` +
          `shipped throttling defaults (secret key), ${process.env.BENCH_LABEL ?? 'this machine'}\n`,
      );
      process.stdout.write(
        'scenario          conns   HTTP req/s   p50 ms   p99 ms |  raw SQL/s   p50 ms   p99 ms |  HTTP/raw  errors' +
          '  API CPU µs/req | raw coalesced/s  HTTP/that\n',
      );
      // The HTTP stack alone (no credential, no database): the most the API process can answer on this machine.
      // BENCH_HOT=floor runs only this row; another BENCH_HOT value skips it (a profile of one path alone).
      for (const c of process.env.BENCH_HOT && process.env.BENCH_HOT !== 'floor' ? [] : CONNECTIONS) {
        const h = await httpLoad(base, c, () => '/', 'GET', '');
        process.stdout.write(
          `${'GET / (floor)'.padEnd(17)} ${String(c).padStart(5)} ${fmt(h.rps, 0)}    ${fmt(h.p50, 2)} ${fmt(h.p99, 2)} | ` +
            `${''.padStart(36)}|           ${String(h.errors).padEnd(6)}${cpu(h)}\n`,
        );
      }
      // BENCH_HOT=usage runs only the scenarios whose name starts with it (for a profile of one path).
      const accounts: string[] = [];
      for (const s of scenarios.filter((x) => x.name.startsWith(process.env.BENCH_HOT ?? ''))) {
        await s.http(4); // warm-up: JIT, pools, plans, the credential cache
        for (const c of CONNECTIONS) {
          // BENCH_ROUNDS > 1 alternates HTTP and raw that many times and adds the median ratio: on a shared machine
          // one pair of cells can move 15-20% either way.
          const ratios: number[] = [];
          for (let round = 0; round < ROUNDS; round++) {
            const h = await s.http(c);
            const r = await s.raw(c);
            // The same statement coalesced as the API process coalesces it, from the same pool: what the database
            // does for the API's own way of sending it (above the one-by-one ceiling under load).
            const rc = await s.raw(c, true);
            const ratio = h.rps / r.rps;
            ratios.push(ratio);
            process.stdout.write(
              `${s.name.padEnd(17)} ${String(c).padStart(5)} ${fmt(h.rps, 0)}    ${fmt(h.p50, 2)} ${fmt(h.p99, 2)} | ` +
                `${fmt(r.rps, 0)} ${fmt(r.p50, 2)} ${fmt(r.p99, 2)} | ${fmt(ratio * 100, 0)}%   ` +
                `${String(h.errors + r.errors + rc.errors).padEnd(6)}${cpu(h)}       | ${fmt(rc.rps, 0)}      ` +
                `${fmt((h.rps / rc.rps) * 100, 0)}%\n`,
            );
            if (h.account && r.account) accounts.push(cpuLine(s.name, c, h.account, r.account));
          }
          if (ROUNDS > 1) {
            const median = medianOf(ratios);
            process.stdout.write(`${`${s.name}, median`.padEnd(23)} ${''.padStart(77)}${fmt(median * 100, 0)}%\n`);
          }
        }
      }
      if (accounts.length) {
        // On two cores shared by all three, throughput is about cores / total CPU per request, so the ratio of the
        // totals is where HTTP/raw would settle if nothing waited; the columns say which process the gap is in.
        process.stdout.write(
          '\nCPU per request (µs): load generator (autocannon | pg client), API, PostgreSQL, total\n' +
            'scenario          conns |   load     API      PG   total |   load      PG   total |  raw/HTTP total  |' +
            ' HTTP: idle%  irq% steal% | raw: idle%  irq% steal%\n' +
            accounts.join(''),
        );
      }
    });

    await measure('metering', () => meteringBench(base, pool, app, account));
    await measure('mcp', () => mcpBench(base, app, account));
    await measure('cancel', () => cancelSessionBench(base, app));
    await measure('webhooks', () => webhookBench(base, app));
    await measure('local', () =>
      localBench(
        base,
        testEnv().baseUrl,
        app,
        Array.from({ length: Math.min(ACCOUNTS, 200) }, (_, i) => `acct-${i}`),
      ),
    );
    if (ANALYTICS_ROWS > 0) await measure('analytics', () => analyticsBench(base, pool));
    await measure('billing', () => billingBench(base));
    await measure('credits', () =>
      creditsBench(base, pool, { connections: CONNECTIONS, seconds: DURATION, httpLoad, raw }),
    );
    if (markdown) recorder!.write(markdown);
  } finally {
    for (const a of apis) a.kill('SIGTERM');
    await pool.end();
    await stopTestEnv();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
