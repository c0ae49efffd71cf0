// `npm run chaos -- offline` (issue 44, item 4): the API goes away while a product's server keeps answering access
// checks from memory and tracking usage with the SDK's local evaluator (`client.local()`, docs/sdk.md "Local
// evaluation"). On a stack of its own (embedded PostgreSQL, the Temporal dev server, the API as a real process):
//
//   1. an app with a catalog (a limit `calls`, metering `tokens`, a feature `sso`; plans free, pro, scale) and
//      accounts; a client process (scripts/chaos-offline-client.ts) that loads most of them and checks and tracks
//      in a loop, its buffer in a file;
//   2. the API process is SIGKILLed and stays down CHAOS_OFFLINE_S (60) seconds; halfway the client is SIGKILLed
//      too and started again on the same buffer file (it knows no account until the API is back);
//   3. the API starts again; the client sends its buffer (each add with its idempotency key) and, on SIGTERM,
//      flushes and ends;
//   4. the verdict (scripts/chaos-offline-judge.ts): every answer for an account the client knew matches what the
//      API says for that account at the usage tracked before it; every tracked unit is counted exactly once (the
//      counters equal the units tracked); nothing dropped, nothing left in the buffer. Exit code 1 otherwise.
//
// Settings: CHAOS_OFFLINE_S (the outage, default 60), CHAOS_OFFLINE_BEFORE_S and CHAOS_OFFLINE_AFTER_S (the run
// before and after it, default 8 each), CHAOS_OFFLINE_SEED, CHAOS_OFFLINE_KEEP=1 keeps the folder with the logs
// (.test-data/chaos-offline-<pid>). test/processes/chaos-offline.test.ts runs it with a 10 s outage on the suite's
// PostgreSQL and Temporal (`runOfflineChaos({ stack })`).
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { pino } from 'pino';
import { startEmbeddedPostgres } from '../src/db/embedded.js';
import { ensureTemporalCli, startTemporalDevServer } from '../src/temporal/devserver.js';
import { judge, type Cut, type LogLine, type Truth } from './chaos-offline-judge.js';
import { Proc, ROOT, serviceProc } from './procs.js';
import { buildService } from './build-service.js';

const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const ADMIN = 'adm_chaos_offline_admin_key_0123456789';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface OfflineSettings {
  outageS: number;
  beforeS: number;
  afterS: number;
  seed: number;
  /** PostgreSQL and Temporal to use (the suite's); default: started here. */
  stack?: { databaseUrl: string; temporalAddress: string } | undefined;
  keep?: boolean;
  /** Where the lines go (default stdout). */
  say?: (line: string) => void;
}

export const offlineSettingsFromEnv = (): OfflineSettings => ({
  outageS: num('CHAOS_OFFLINE_S', 60),
  beforeS: num('CHAOS_OFFLINE_BEFORE_S', 8),
  afterS: num('CHAOS_OFFLINE_AFTER_S', 8),
  seed: num('CHAOS_OFFLINE_SEED', Date.now() % 100_000),
  keep: process.env.CHAOS_OFFLINE_KEEP === '1',
});

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

/** The catalog: `calls` a limit, `tokens` metering (unlimited everywhere), `sso` a feature. */
const PLANS = [
  { id: 'free', calls: 25, sso: false },
  { id: 'pro', calls: 300, sso: true },
  { id: 'scale', calls: null, sso: true },
];
const KNOWN = Array.from({ length: 9 }, (_, i) => ({ id: `k${i + 1}`, plan: PLANS[i % 3].id }));
const UNKNOWN = [
  { id: 'u1', plan: 'free' },
  { id: 'u2', plan: 'pro' },
];

/** Runs the scenario; resolves with the exit code (0: every check right, every unit counted once). */
export async function runOfflineChaos(s: OfflineSettings): Promise<number> {
  await buildService(); // the bundle its API process runs
  const say = s.say ?? ((line: string) => process.stdout.write(`${line}\n`));
  const dir = path.join(ROOT, '.test-data', `chaos-offline-${process.pid}-${Date.now()}`);
  fs.mkdirSync(dir, { recursive: true });
  const cleanup: (() => Promise<unknown>)[] = [];
  let ok = false;
  say(`offerkit chaos offline: outage ${s.outageS} s (before ${s.beforeS} s, after ${s.afterS} s), seed ${s.seed}`);
  try {
    let databaseUrl = s.stack?.databaseUrl;
    let temporalAddress = s.stack?.temporalAddress;
    if (!databaseUrl || !temporalAddress) {
      const quiet = pino({ level: 'silent' });
      const postgres = await startEmbeddedPostgres({
        dir: path.join(dir, 'pg'),
        port: await freePort(),
        logger: quiet,
      });
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
      databaseUrl = postgres.url;
      temporalAddress = temporal.address;
    }
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const api = serviceProc(
      'api',
      'api',
      {
        DATABASE_URL: databaseUrl,
        TEMPORAL_ADDRESS: temporalAddress,
        TEMPORAL_NAMESPACE: 'default',
        TEMPORAL_TASK_QUEUE: `offerkit-chaos-offline-${process.pid}`,
        ADMIN_API_KEY: ADMIN,
        DATA_DIR: dir,
        LOG_LEVEL: 'info',
        HOST: '127.0.0.1',
        PORT: String(port),
      },
      dir,
    );
    cleanup.push(() => api.kill('SIGTERM'));
    await api.startRetrying();

    // ---- the app --------------------------------------------------------------------------------------------
    const call = async (method: string, p: string, token: string, body?: unknown) => {
      const res = await fetch(`${base}${p}`, {
        method,
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${text}`);
      return text ? JSON.parse(text) : null;
    };
    const app = (await call('POST', '/apps', ADMIN, { name: 'chaos offline' })) as { id: string; api_key: string };
    const A = `/apps/${app.id}`;
    const key = app.api_key;
    await call('POST', `${A}/entitlements`, key, { id: 'calls', type: 'usage', name: 'Calls' });
    await call('POST', `${A}/entitlements`, key, { id: 'tokens', type: 'usage', name: 'Tokens' });
    await call('POST', `${A}/entitlements`, key, { id: 'sso', type: 'boolean', name: 'SSO' });
    for (const p of PLANS) {
      await call('POST', `${A}/plans`, key, { id: p.id, name: p.id, ...(p.id === 'free' ? { isFree: true } : {}) });
      await call('POST', `${A}/plans/${p.id}/entitlements`, key, { id: 'calls', max: p.calls });
      await call('POST', `${A}/plans/${p.id}/entitlements`, key, { id: 'tokens', max: null });
      if (p.sso) await call('POST', `${A}/plans/${p.id}/entitlements`, key, { id: 'sso' });
    }
    for (const a of [...KNOWN, ...UNKNOWN]) await call('POST', `${A}/namespaces`, key, a);
    say(`app ${app.id}: ${KNOWN.length} accounts the client loads, ${UNKNOWN.length} it never loads first`);

    // ---- the client -----------------------------------------------------------------------------------------
    const logFile = path.join(dir, 'client-log.jsonl');
    const bufferFile = path.join(dir, 'usage-buffer.jsonl');
    const mark = (what: string) => fs.appendFileSync(logFile, `${JSON.stringify({ k: 'm', what })}\n`);
    const clientEnv = (seed: number) => ({
      OFFLINE_BASE: base,
      OFFLINE_APP: app.id,
      OFFLINE_KEY: key,
      OFFLINE_BUFFER: bufferFile,
      OFFLINE_LOG: logFile,
      OFFLINE_ACCOUNTS: JSON.stringify(KNOWN.map((a) => a.id)),
      OFFLINE_UNKNOWN: JSON.stringify(UNKNOWN.map((a) => a.id)),
      OFFLINE_SEED: String(seed),
    });
    const client = (n: number) =>
      new Proc(
        `client-${n}`,
        process.execPath,
        ['--import', 'tsx', 'scripts/chaos-offline-client.ts'],
        clientEnv(s.seed + n),
        path.join(dir, `client-${n}.log`),
        /client running/,
      );
    const first = client(1);
    cleanup.push(() => first.kill());
    await first.start(60_000);
    say(`client 1 running; ${s.beforeS} s with the API up`);
    await sleep(s.beforeS * 1000);

    // ---- the outage -----------------------------------------------------------------------------------------
    await api.kill('SIGKILL');
    mark('api-down');
    const down = Date.now();
    say(`API process SIGKILLed; down for ${s.outageS} s`);
    await sleep((s.outageS * 1000) / 2);
    await first.kill('SIGKILL');
    mark('client-killed');
    const buffered = fs.existsSync(bufferFile) ? fs.readFileSync(bufferFile, 'utf8').trim().split('\n') : [];
    const cut: Cut = {
      track: null,
      lastBuffered: buffered.at(-1) ? JSON.parse(buffered.at(-1)!) : null,
    };
    say(`client 1 SIGKILLed with ${buffered.filter(Boolean).length} adds in its buffer file; client 2 starts on it`);
    const second = client(2);
    cleanup.push(() => second.kill());
    await second.start(60_000);
    await sleep(Math.max(0, down + s.outageS * 1000 - Date.now()));
    await api.startRetrying();
    mark('api-up');
    say(`API back after ${((Date.now() - down) / 1000).toFixed(1)} s; ${s.afterS} s more`);
    await sleep(s.afterS * 1000);
    const flushStart = Date.now();
    await second.kill('SIGTERM');
    say(`client 2 stopped (flushed its buffer in ${((Date.now() - flushStart) / 1000).toFixed(1)} s)`);

    // ---- the verdict ----------------------------------------------------------------------------------------
    const truth: Record<string, Truth> = {};
    const ruleBroken: string[] = [];
    for (const a of [...KNOWN, ...UNKNOWN]) {
      const access = (await call('GET', `${A}/namespaces/${a.id}/plan`, key)) as {
        entitlements: { id: string; type: string; max: number | null; usage: number; can: boolean }[];
      };
      const t: Truth = { limits: {}, usage: { calls: 0, tokens: 0 } };
      for (const e of access.entitlements) {
        if (e.type === 'usage') {
          t.limits[e.id] = { type: 'usage', max: e.max };
          t.usage[e.id] = e.usage;
          // The rule the judge applies is the API's own: it answers `can` as usage < max.
          if (e.can !== (e.max === null || e.usage < e.max)) ruleBroken.push(`${a.id}/${e.id}`);
        } else t.limits[e.id] = { type: 'boolean', can: e.can };
      }
      truth[a.id] = t;
    }
    const lines = fs
      .readFileSync(logFile, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as LogLine);
    const v = judge(lines, truth, [cut]);
    const tracked = Object.values(v.tracked).reduce((n, byE) => n + Object.values(byE).reduce((x, y) => x + y, 0), 0);
    say(
      `checks: ${v.checks} (${v.knownChecks} for known accounts, ${v.unknownChecks} by the unknown policy); ` +
        `while the API was down: ${v.offline.checks} (${v.offline.knownChecks} known), ${v.offline.tracks} tracks`,
    );
    say(`wrong answers for known accounts: ${v.wrong.length}`);
    for (const w of v.wrong.slice(0, 10))
      say(`  line ${w.index}: ${w.account}/${w.entitlement} answered ${w.answered}`);
    say(
      `units tracked: ${tracked}; counted differently: ${v.mismatched.length}; dropped: ${v.dropped}; ` +
        `the track the kill cut: ${v.cutCounted === null ? 'none' : v.cutCounted ? 'in the file, counted' : 'not in the file'}`,
    );
    for (const m of v.mismatched) say(`  ${m.account}/${m.entitlement}: tracked ${m.tracked}, counted ${m.counted}`);
    say(`left in the buffer at the end: ${v.ends.map((e) => e.pending).join(', ') || 'the client did not end'}`);
    if (ruleBroken.length) say(`the API's can is not usage < max for: ${ruleBroken.join(', ')}`);
    ok = v.ok && ruleBroken.length === 0 && v.offline.knownChecks > 0 && v.offline.tracks > 0;
    say(`verdict: ${ok ? 'PASS' : 'FAIL'}`);
    return ok ? 0 : 1;
  } catch (err) {
    say(`chaos offline failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    say(`logs: ${path.relative(ROOT, dir)}`);
    return 1;
  } finally {
    for (const f of cleanup.reverse()) await f().catch(() => undefined);
    if (ok && !s.keep) fs.rmSync(dir, { recursive: true, force: true });
    else say(`kept: ${path.relative(ROOT, dir)}`);
  }
}
