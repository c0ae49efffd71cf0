// `npm run chaos -- soak` (issue 29): does memory level off under steady load? Starts `src/main.ts` as `npm start`
// does (embedded PostgreSQL and Temporal dev server as its children, the demo workspace, the in-process worker), then
// runs a bounded mixed load against an app of its own for CHAOS_SOAK_MIN minutes (default 30): usage adds and
// effective-access reads with the secret key, account updates whose events are delivered to a local webhook
// receiver, and account creations. Every CHAOS_SOAK_SAMPLE_S seconds (default 30) it samples the memory (PSS: RSS
// with shared pages split between their processes) of the main process, of the Temporal dev server and of
// PostgreSQL (each process tree), and at the end says
// whether each levelled off (scripts/soak-judge.ts): growth only counts (a falling slope is memory given back), the
// slope of a least-squares line through the second half of the samples and through the last quarter, in MB per 10
// minutes, against CHAOS_SOAK_FLAT_MB (default 5); a run shorter than CHAOS_SOAK_JUDGE_MIN minutes (default 30) gives
// no verdict, because caches (PostgreSQL's shared buffers, Temporal's) are still filling in a short run's second half.
// PostgreSQL is judged on its processes' own memory; its shared memory (the shared buffers) is allocated at start and
// shown beside it. Deliveries are checked against the events the service recorded: every one must reach the receiver
// (by `webhook-id`), and each that did not is named with its delivery's state. When anything fails the data directory
// is kept (CHAOS_SOAK_KEEP=1 keeps it always).
// With CHAOS_SOAK_HEAP=1 the main process also writes a heap snapshot (its main thread's V8 heap, after a full
// collection) at a quarter of the run and at the end, and the soak names the kinds of objects that grew between them
// (scripts/heap-diff.ts): growth the heap does not show is outside it (the worker's workflow threads, native memory).
// Taking a snapshot raises the process's memory for good (about 350 MB in a 180 MB heap): such a run's memory
// verdict is not comparable with a plain run's.
// Settings: CHAOS_SOAK_MIN, CHAOS_SOAK_RPS (default 100 requests a second in all), CHAOS_SOAK_SAMPLE_S,
// CHAOS_SOAK_HEAP.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { embeddedDatabaseUrl } from '../src/config.js';
import { freePort } from '../test/helpers/servers.js';
import { heapGrowth, heapKinds } from './heap-diff.js';
import { childEnv } from './procs.js';
import { judgeSoak } from './soak-judge.js';
import { buildService, serviceArgs } from './build-service.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MINUTES = Number(process.env.CHAOS_SOAK_MIN ?? 30);
const RPS = Number(process.env.CHAOS_SOAK_RPS ?? 100);
const SAMPLE_S = Number(process.env.CHAOS_SOAK_SAMPLE_S ?? 30);
const FLAT_MB = Number(process.env.CHAOS_SOAK_FLAT_MB ?? 5);
const JUDGE_MIN = Number(process.env.CHAOS_SOAK_JUDGE_MIN ?? 30);
const ADMIN = 'adm_soak_0123456789abcdef';
const HEAP = process.env.CHAOS_SOAK_HEAP === '1';
const ACCOUNTS = 500;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const say = (line: string) => process.stdout.write(line + '\n');
const mb = (kb: number) => (kb / 1024).toFixed(0).padStart(5);

/** Every process: pid → { parent, rss in kB, command line }. */
function processes(): Map<number, { ppid: number; rss: number; args: string }> {
  const out = execFileSync('ps', ['-e', '-o', 'pid=,ppid=,rss=,args='], { encoding: 'utf8' });
  const map = new Map<number, { ppid: number; rss: number; args: string }>();
  for (const line of out.split('\n')) {
    const m = /^\s*(\d+)\s+(\d+)\s+(\d+)\s+(.*)$/.exec(line);
    if (m) map.set(Number(m[1]), { ppid: Number(m[2]), rss: Number(m[3]), args: m[4] });
  }
  return map;
}

/**
 * A process's proportional set size (kB): its private memory plus its share of memory it shares (PostgreSQL's
 * backends share its buffers; their RSS would count them once per backend), and of that the share of shared memory
 * (`Pss_Shmem`: PostgreSQL's shared buffers, fixed in size when it starts). RSS when PSS cannot be read.
 */
function pss(pid: number, rss: number): { pss: number; shmem: number } {
  try {
    const rollup = fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const m = /^Pss:\s+(\d+) kB/m.exec(rollup);
    const shm = /^Pss_Shmem:\s+(\d+) kB/m.exec(rollup);
    return { pss: m ? Number(m[1]) : rss, shmem: shm ? Number(shm[1]) : 0 };
  } catch {
    return { pss: rss, shmem: 0 };
  }
}

/**
 * The memory (PSS, kB) of the main process, and of the process trees under it whose command matches each pattern;
 * PostgreSQL's split into its shared memory and the rest (each backend's own), and each PostgreSQL process's own
 * memory by pid (`pgOwn`) so the end can say which kind of backend holds it.
 */
function sample(mainPid: number) {
  const ps = processes();
  const shmem = new Map<number, number>();
  for (const [pid, p] of ps) {
    const m = pss(pid, p.rss);
    p.rss = m.pss;
    shmem.set(pid, m.shmem);
  }
  const children = (pid: number) => [...ps].filter(([, p]) => p.ppid === pid).map(([c]) => c);
  const tree = (pid: number): number[] => [pid, ...children(pid).flatMap(tree)];
  const below = tree(mainPid).slice(1);
  const pids = (match: RegExp) =>
    below.filter((pid) => match.test(ps.get(pid)!.args) && !match.test(ps.get(ps.get(pid)!.ppid)!.args)).flatMap(tree);
  const sum = (list: number[], of: (pid: number) => number) => list.reduce((n, pid) => n + of(pid), 0);
  const pgPids = pids(/postgres/);
  const pgShared = sum(pgPids, (pid) => shmem.get(pid) ?? 0);
  const pgOwn = new Map(pgPids.map((pid) => [pid, (ps.get(pid)?.rss ?? 0) - (shmem.get(pid) ?? 0)]));
  return {
    main: ps.get(mainPid)?.rss ?? 0,
    temporal: sum(pids(/temporal/), (pid) => ps.get(pid)?.rss ?? 0),
    postgres: sum(pgPids, (pid) => ps.get(pid)?.rss ?? 0),
    pgShared,
    pgOwn: sum(pgPids, (pid) => pgOwn.get(pid)!),
    byPid: pgOwn,
  };
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'offerkit-soak-'));
  fs.chmodSync(dir, 0o755);
  const port = await freePort();
  const pgPort = await freePort();
  const base = `http://127.0.0.1:${port}`;

  // The webhook receiver: the events it received (`webhook-id` is the event id, the same on every retry).
  const received = new Set<string>();
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received.add(String(req.headers['webhook-id']));
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as net.AddressInfo).port}/hooks`;

  say(`soak: ${MINUTES} min at about ${RPS} requests/s; data in ${dir}`);
  const heapFlags = HEAP ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${dir}`] : [];
  await buildService(); // `npm start` runs the bundle
  const child = spawn(process.execPath, [...heapFlags, ...serviceArgs('main')], {
    cwd: root,
    env: {
      ...childEnv(),
      ...(process.env.TEMPORAL_CLI ? { TEMPORAL_CLI: process.env.TEMPORAL_CLI } : {}),
      DATA_DIR: dir,
      HOST: '127.0.0.1',
      PORT: String(port),
      EMBEDDED_POSTGRES_PORT: String(pgPort),
      TEMPORAL_PORT: String(await freePort()),
      TEMPORAL_UI_PORT: String(await freePort()),
      PAYPAL_STANDIN_PORT: String(await freePort()),
      ADMIN_API_KEY: ADMIN,
      LOG_LEVEL: 'warn',
      WEBHOOKS_ALLOW_PRIVATE_URLS: 'true',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  child.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  const stop = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGINT');
      setTimeout(() => child.kill('SIGKILL'), 60_000).unref();
    });
  try {
    for (const end = Date.now() + 600_000; !out.includes('Ctrl-C stops everything'); await sleep(200))
      if (Date.now() > end || child.exitCode !== null) throw new Error(`npm start did not start:\n${out}`);

    const api = async (method: string, p: string, token: string, body?: unknown) => {
      const res = await fetch(base + p, {
        method,
        headers: { Authorization: `Bearer ${token}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(30_000),
      });
      const text = await res.text();
      return { status: res.status, body: text ? (JSON.parse(text) as Record<string, string>) : null };
    };
    const must = async (method: string, p: string, token: string, body?: unknown) => {
      const r = await api(method, p, token, body);
      if (r.status >= 300) throw new Error(`${method} ${p}: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body!;
    };
    const app = await must('POST', '/apps', ADMIN, { name: 'Soak' });
    const key = app.api_key as string;
    const a = `/apps/${app.id}`;
    await must('POST', `${a}/entitlements`, key, {
      id: 'api_calls',
      type: 'usage',
      name: 'API calls',
      overage: { mode: 'allow' },
    });
    await must('POST', `${a}/plans`, key, { id: 'base', name: 'Base' });
    await must('POST', `${a}/plans/base/entitlements`, key, { id: 'api_calls', max: null });
    await must('POST', `${a}/webhooks`, key, { url: receiverUrl, events: ['account.updated', 'account.created'] });
    for (let i = 0; i < ACCOUNTS; i++) await must('POST', `${a}/namespaces`, key, { id: `soak-${i}`, plan: 'base' });

    // The load: a fixed request rate (paced per worker), so memory is compared under the same work throughout.
    const counts = { usage: 0, access: 0, update: 0, create: 0, errors: 0 };
    const pick = () => `soak-${Math.floor(Math.random() * ACCOUNTS)}`;
    let running = true;
    let created = 0;
    let renamed = 0;
    const WORKERS = 16;
    const load = async () => {
      const gap = (1000 * WORKERS) / RPS;
      while (running) {
        const started = Date.now();
        const r = Math.random();
        try {
          let res;
          if (r < 0.6) {
            res = await api('POST', `${a}/namespaces/${pick()}/usage/api_calls/add`, key);
            counts.usage++;
          } else if (r < 0.9) {
            res = await api('GET', `${a}/namespaces/${pick()}/plan`, key);
            counts.access++;
          } else if (r < 0.98) {
            res = await api('PATCH', `${a}/namespaces/${pick()}`, key, { name: `Soak ${renamed++}` });
            counts.update++;
          } else {
            res = await api('POST', `${a}/namespaces`, key, { id: `soak-new-${created++}`, plan: 'base' });
            counts.create++;
          }
          if (res.status >= 400) counts.errors++;
        } catch {
          counts.errors++;
        }
        await sleep(Math.max(0, gap - (Date.now() - started)));
      }
    };
    const workers = Array.from({ length: WORKERS }, load);

    // What PostgreSQL's memory is made of: its shared buffers (128 MB by default) count in the PSS of the backends
    // that touched them, so PostgreSQL's share grows until the buffers are all in use, then levels off.
    const db = new pg.Client({ connectionString: embeddedDatabaseUrl(pgPort) });
    await db.connect();
    await db.query('create extension if not exists pg_buffercache');
    const buffers = async () =>
      (
        await db.query<{ used: string; total: string; size: string }>(
          `select (select count(*) from pg_buffercache where relfilenode is not null) * 8192 / 1048576 as used,
                  (select setting::bigint * 8192 / 1048576 from pg_settings where name = 'shared_buffers') as total,
                  pg_database_size(current_database()) / 1048576 as size`,
        )
      ).rows[0];

    // The events the endpoint subscribes to, as the service recorded them (the truth the deliveries are checked
    // against: an update that changes nothing records no event).
    const events = async () =>
      Number(
        (
          await db.query<{ n: string }>(
            `select count(*) as n from events where app_id = $1 and type in ('account.updated', 'account.created')`,
            [app.id],
          )
        ).rows[0].n,
      );
    // Which kind of PostgreSQL process holds its own memory (not the shared buffers): by application name, or the
    // backend type for its own processes.
    const pgGroups = async (byPid: Map<number, number>) => {
      const { rows } = await db.query<{ pid: number; name: string }>(
        `select pid, coalesce(nullif(application_name, ''), backend_type, 'other') as name from pg_stat_activity`,
      );
      const name = new Map(rows.map((r) => [r.pid, r.name]));
      const groups = new Map<string, { n: number; kb: number }>();
      for (const [pid, kb] of byPid) {
        const g = name.get(pid) ?? 'postmaster and others';
        const e = groups.get(g) ?? { n: 0, kb: 0 };
        groups.set(g, { n: e.n + 1, kb: e.kb + kb });
      }
      return groups;
    };
    const shmemTotal = Number(
      (await db.query<{ mb: string }>(`select sum(allocated_size) / 1048576 as mb from pg_shmem_allocations`)).rows[0]
        .mb,
    );

    const t0 = Date.now();
    const samples: { min: number; main: number; temporal: number; postgres: number; pgOwn: number }[] = [];
    let halfway: Map<string, { n: number; kb: number }> | null = null;
    say('memory is PSS (RSS with shared pages split between the processes sharing them); PostgreSQL is split into');
    say(`its shared memory (fixed at start: ${shmemTotal.toFixed(0)} MB) and its processes' own memory`);
    say(
      '  min   main MB  Temporal MB  PG shared MB  PG own MB   requests  errors  events  received  PG buffers used' +
        '  PG data MB',
    );
    let firstHeap: string | null = null;
    while (Date.now() - t0 < MINUTES * 60_000) {
      const { byPid, pgShared, ...s } = { min: (Date.now() - t0) / 60_000, ...sample(child.pid!) };
      samples.push(s);
      if (HEAP && !firstHeap && s.min >= MINUTES / 4) firstHeap = await heapSnapshot(child, dir);
      if (!halfway && s.min >= MINUTES / 2) halfway = await pgGroups(byPid).catch(() => null);
      const requests = counts.usage + counts.access + counts.update + counts.create;
      const b = await buffers().catch(() => ({ used: '?', total: '?', size: '?' }));
      const recorded = await events().catch(() => NaN);
      say(
        `${s.min.toFixed(1).padStart(5)}   ${mb(s.main)}     ${mb(s.temporal)}         ${mb(pgShared)}      ` +
          `${mb(s.pgOwn)}   ${String(requests).padStart(8)}  ${String(counts.errors).padStart(6)}` +
          `  ${String(recorded).padStart(6)}  ${String(received.size).padStart(8)}` +
          `  ${`${b.used} of ${b.total} MB`.padStart(15)}  ${String(b.size).padStart(10)}`,
      );
      await sleep(SAMPLE_S * 1000);
    }
    running = false;
    await Promise.all(workers);
    if (firstHeap) {
      const lastHeap = await heapSnapshot(child, dir);
      say(`the main process's heap from minute ${(MINUTES / 4).toFixed(0)} to the end (${firstHeap}, ${lastHeap}):`);
      for (const line of heapGrowth(heapKinds(path.join(dir, firstHeap)), heapKinds(path.join(dir, lastHeap))))
        say(`  ${line}`);
    }
    const {
      byPid: lastByPid,
      pgShared: lastShared,
      ...last
    } = { min: (Date.now() - t0) / 60_000, ...sample(child.pid!) };
    samples.push(last);
    const atEnd = await pgGroups(lastByPid);
    // Deliveries catch up (each recorded event of the endpoint's types is delivered at least once): a backlog would
    // be work held in memory, not a leak, so the figures say how long it took.
    const expected = await events();
    const caughtUp = Date.now();
    while (received.size < expected && Date.now() - caughtUp < 300_000) await sleep(1000);
    say(
      `deliveries: ${received.size} of ${expected} recorded events received ` +
        `(${((Date.now() - caughtUp) / 1000).toFixed(0)} s after the load stopped)`,
    );
    const missing = await missingDeliveries(db, app.id, received);
    for (const line of missing) say(`  not received: ${line}`);
    say(`PostgreSQL's own memory by kind of process (count, MB), at the half and at the end:`);
    for (const name of new Set([...(halfway?.keys() ?? []), ...atEnd.keys()])) {
      const h = halfway?.get(name);
      const e = atEnd.get(name);
      say(
        `  ${name.padEnd(34)} ${h ? `${String(h.n).padStart(3)} ${mb(h.kb)}` : '        -'}   ` +
          `${e ? `${String(e.n).padStart(3)} ${mb(e.kb)}` : '        -'}`,
      );
    }
    say(`PostgreSQL's shared memory at the end: ${mb(lastShared)} MB of the ${shmemTotal.toFixed(0)} MB it has`);

    say(
      `\nrequests: ${counts.usage} usage adds, ${counts.access} access reads, ${counts.update} account updates, ` +
        `${counts.create} account creations; ${counts.errors} errors; ${received.size} events received by webhook`,
    );
    // PostgreSQL is judged on its processes' own memory: its shared memory is allocated once at start (the shared
    // buffers fill it as the data is touched) and cannot grow past what it said above.
    const keys = ['main', 'temporal', 'pgOwn'] as const;
    const judged = judgeSoak(samples, [...keys], { flatMb: FLAT_MB, minMinutes: JUDGE_MIN });
    say(
      'memory (MB): first sample, peak, last; the slopes (MB per 10 minutes) through the second half and the last ' +
        'quarter:',
    );
    const signed = (x: number) => `${x >= 0 ? '+' : ''}${x.toFixed(1)}`;
    for (const j of judged.processes) {
      const k = j.process as (typeof keys)[number];
      say(
        `  ${k.padEnd(9)} ${mb(samples[0][k])} ${mb(Math.max(...samples.map((s) => s[k])))} ${mb(samples.at(-1)![k])}` +
          `   ${signed(j.secondHalf)} / ${signed(j.lastQuarter)} MB/10 min: ${j.verdict}`,
      );
    }
    // Deliveries that fell behind are work held in Temporal (open workflows) and PostgreSQL (pending rows): growth
    // while they pile up is the backlog, not a leak; a lower CHAOS_SOAK_RPS tells the two apart.
    const behind = expected - received.size;
    if (behind > expected / 10)
      say(`note: ${behind} deliveries were still waiting: the load was more than this machine delivers`);
    if (!judged.longEnough)
      say(
        `verdict: none: ${MINUTES} minutes is too short to judge (caches fill for tens of minutes); ` +
          `run at least ${JUDGE_MIN} (CHAOS_SOAK_MIN)`,
      );
    else say(judged.flat ? 'verdict: memory levels off' : 'verdict: memory still grows at the end of the run');
    if (judged.longEnough && !judged.flat) process.exitCode = 1;
    if (missing.length) {
      say(`deliveries: ${behind} recorded events never reached the endpoint (listed above)`);
      process.exitCode = 1;
    }
    await db.end();
  } finally {
    await stop();
    receiver.close();
    // Kept when something is wrong (or CHAOS_SOAK_KEEP=1), to look at with the service started on it:
    // DATA_DIR=<dir> npm start.
    if (process.exitCode || process.env.CHAOS_SOAK_KEEP === '1') say(`data kept in ${dir}`);
    else fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Asks the main process for a heap snapshot (SIGUSR2) and waits until its file is written; answers its name. */
async function heapSnapshot(child: ReturnType<typeof spawn>, dir: string): Promise<string> {
  const known = new Set(fs.readdirSync(dir));
  child.kill('SIGUSR2');
  for (const end = Date.now() + 300_000; Date.now() < end; await sleep(1000)) {
    const file = fs.readdirSync(dir).find((f) => f.endsWith('.heapsnapshot') && !known.has(f));
    if (!file) continue;
    // Written in one go by the main thread, which answers nothing else meanwhile: done when it ends with `]}`.
    const size = fs.statSync(path.join(dir, file)).size;
    const fd = fs.openSync(path.join(dir, file), 'r');
    const tail = Buffer.alloc(16);
    fs.readSync(fd, tail, 0, 16, Math.max(0, size - 16));
    fs.closeSync(fd);
    if (/\]\s*\}\s*$/.test(tail.toString())) return file;
  }
  throw new Error('the main process wrote no heap snapshot within 5 minutes');
}

/**
 * The recorded events the receiver never got (at most 20), each with what the service knows of its delivery: no
 * delivery row at all (the fan-out never made one), or its status, attempts, the last answer or error and when the
 * next attempt is due.
 */
async function missingDeliveries(db: pg.Client, appId: string, received: Set<string>): Promise<string[]> {
  const { rows } = await db.query<{ id: string; type: string; created_at: Date; fanout_pending: boolean }>(
    `select id, type, created_at, fanout_pending from events
      where app_id = $1 and type in ('account.updated', 'account.created') order by created_at`,
    [appId],
  );
  const gone = rows.filter((e) => !received.has(e.id));
  const lines: string[] = [];
  for (const e of gone.slice(0, 20)) {
    const d = await db.query<Record<string, unknown>>(
      `select status, attempts, response_status, error, next_attempt_at, last_attempt_at from webhook_deliveries
        where app_id = $1 and event_id = $2`,
      [appId, e.id],
    );
    const state = d.rows.length
      ? d.rows.map((r) => JSON.stringify(r)).join('; ')
      : `no delivery row${e.fanout_pending ? ' (fan-out still pending)' : ''}`;
    lines.push(`${e.id} ${e.type} at ${e.created_at.toISOString()}: ${state}`);
  }
  if (gone.length > 20) lines.push(`and ${gone.length - 20} more`);
  return lines;
}

// Exits once judged, with the verdict's code (`npm run chaos -- soak` awaits this module's end forever otherwise).
main().then(
  () => process.exit(process.exitCode ?? 0),
  (err) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
