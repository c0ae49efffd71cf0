// npm run bench: starts the servers the tests start (embedded PostgreSQL, Temporal dev server) and the API in its own
// process (so the load generator does not share its event loop), seeds the main app, and runs the sections BENCH_ONLY
// names, each in a file of its own (bench/<section>.ts) measuring with bench/load.ts and bench/cpu.ts.
import { spawn } from 'node:child_process';
import pg from 'pg';
import { setCoalesceInFlight } from '../src/db/coalesce.js';
import { createTestApp, seedCatalog } from '../test/helpers/factories.js';
import { freePort, startTestEnv, stopTestEnv, testEnv } from '../test/helpers/servers.js';
import { analyticsBench, ANALYTICS_ROWS } from './analytics.js';
import { billingBench } from './billing.js';
import { cancelSessionBench } from './cancel.js';
import { watchApiProcesses } from './cpu.js';
import { creditsBench } from './credits.js';
import { hotBench } from './hot.js';
import { httpLoad, raw } from './load.js';
import { localBench } from './local.js';
import { markdownTarget, sectionRecorder } from './markdown.js';
import { mcpBench } from './mcp.js';
import { meteringBench } from './metering.js';
import { ACCOUNTS, CONNECTIONS, DURATION, root } from './settings.js';
import { webhookBench } from './webhooks.js';

/** The API's `DB_COALESCE_IN_FLIGHT` (its default unless set), which the raw coalesced loop follows too. */
const COALESCE_IN_FLIGHT = Number(process.env.DB_COALESCE_IN_FLIGHT ?? 2);
const API_PROCESSES = Number(process.env.BENCH_API_PROCESSES ?? 1);

/**
 * Sections to run, comma-separated (all when unset): `hot` (usage add and effective access beside raw SQL),
 * `metering` (batch ingest beside raw, idempotent replay), `mcp`, `cancel`, `webhooks` (with the Temporal baseline,
 * bench/temporal-baseline.ts), `analytics`, `billing` (intents of the account actor: a quote, pause and resume round
 * trips, a refusal), `local` (checks from memory, change to seen through another API process), `credits` (a
 * credit-drawing usage add and ingest beside raw). Each is bench/<section>.ts.
 */
const ONLY = (process.env.BENCH_ONLY ?? '')
  .split(',')
  .map((x) => x.trim())
  .filter(Boolean);
const want = (section: string) => ONLY.length === 0 || ONLY.includes(section);

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
  watchApiProcesses(apis.map((a) => a.pid!).filter(Boolean));
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

    // The raw loop's coalesced runs, as the API process has them.
    setCoalesceInFlight(COALESCE_IN_FLIGHT);
    await measure('hot', () => hotBench(base, pool, app, account));

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
