// The contract step: schemathesis (pinned) against the test servers, with every check, once per credential
// (admin key, secret key, publishable key), on an app seeded with a catalog, accounts, an offer, a cancel flow, a
// webhook endpoint and an agent thread. Zero failures, or an exclusion written in test/contract/schemathesis.toml
// with its reason. Schemathesis is installed on first use into `schemathesis-<version>-<python>` in the tools folder
// (a Python virtual environment in the machine's cache, src/tools.ts); later runs, of any clone, reuse it.
//
// `npm test` runs it as mocha's last file (test/contract/schemathesis.fuzz.ts, one test per pass, on the suite's
// servers, where the response-schema check of every answer is on as well); this script runs it on its own:
//
//   npm run contract                      # the whole step on servers of its own
//   CONTRACT_EXAMPLES=30 npm run contract # more examples per operation (default 5; 2 in the key passes)
//   CONTRACT_ONLY=secret npm run contract # one credential: admin, secret, publishable or destructive
//   CONTRACT_ONLY=admin-2 npm run contract # one part of the admin pass (admin-1 … admin-3, admin-stateful)
import { spawnSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { encodeCursor } from '../src/http/pagination.js';
import { toolsDir } from '../src/tools.js';
import { createAccount, createTestApp, seedCatalog, connectProvider } from '../test/helpers/factories.js';
import { call, post } from '../test/helpers/http.js';
import { startTestEnv, stopTestEnv, type TestEnv } from '../test/helpers/servers.js';

export const SCHEMATHESIS_VERSION = '4.32.5';
const ROOT = path.resolve(import.meta.dirname, '..');
const CONFIG = path.join(ROOT, 'test', 'contract', 'schemathesis.toml');
const EXAMPLES = Number(process.env.CONTRACT_EXAMPLES ?? 5);
const SEED = process.env.CONTRACT_SEED ?? '20261123';
/**
 * Examples per operation in the secret and publishable passes' fuzzing: the same generators as the admin parts'
 * (which send EXAMPLES), held to what the key may do. CONTRACT_EXAMPLES sets both; CONTRACT_CREDENTIAL_EXAMPLES this.
 */
const CREDENTIAL_EXAMPLES = Number(
  process.env.CONTRACT_CREDENTIAL_EXAMPLES ?? (process.env.CONTRACT_EXAMPLES ? EXAMPLES : 2),
);
/**
 * The admin pass is the longest by far (every operation, every phase), so it runs in parts that `npm test` can share
 * out between its halves like files: ADMIN_PARTS parts of the operations (examples, boundary coverage and fuzzing,
 * which look at one operation at a time) and `admin-stateful`, the stateful phase over every operation at once (its
 * sequences link operations, so it is not cut). Together they send what the one admin pass sent.
 */
export const ADMIN_PARTS = 3;
const ADMIN_PART_NAMES = [...Array.from({ length: ADMIN_PARTS }, (_, i) => `admin-${i + 1}`), 'admin-stateful'];
/** The passes, in the order they run: see contractPasses. */
export const PASS_NAMES = [...ADMIN_PART_NAMES, 'secret', 'publishable', 'destructive'];

/** The passes a CONTRACT_ONLY list names (all when unset); `admin` names every part of the admin pass. */
export function passNames(only: string | undefined = process.env.CONTRACT_ONLY): string[] {
  if (!only) return PASS_NAMES;
  return [...new Set(only.split(',').flatMap((n) => (n === 'admin' ? ADMIN_PART_NAMES : [n])))];
}

function fail(message: string): never {
  process.stderr.write(`\ncontract: ${message}\n`);
  process.exit(1);
}

/** The `st` binary of the pinned schemathesis, installed into the project's ignored .tools on first use. */
export function ensureSchemathesis(): string {
  const python = process.env.PYTHON ?? 'python3';
  // Named after the Python too: an environment is tied to the Python that made it.
  const version = spawnSync(python, ['-c', 'import sys; print("%d.%d.%d" % sys.version_info[:3])'], {
    encoding: 'utf8',
  }).stdout?.trim();
  const VENV = path.join(toolsDir(), `schemathesis-${SCHEMATHESIS_VERSION}-py${version || 'unknown'}`);
  const st = path.join(VENV, 'bin', 'st');
  const marker = path.join(VENV, '.installed');
  if (fs.existsSync(marker) && fs.readFileSync(marker, 'utf8') === SCHEMATHESIS_VERSION) return st;
  process.stdout.write(`contract: installing schemathesis ${SCHEMATHESIS_VERSION} into ${VENV} (once)\n`);
  fs.rmSync(VENV, { recursive: true, force: true });
  const install = ['install', '--disable-pip-version-check', '-q', `schemathesis==${SCHEMATHESIS_VERSION}`];
  // `st` never runs pip, so the environment is made without one (`--without-pip`: venv's ensurepip installs and
  // byte-compiles pip and setuptools, about 6 CPU-seconds) and the creating Python's own pip installs into it
  // (`--python`, pip 22.3+). A Python without such a pip gets the environment with its own pip, as before.
  const lean =
    spawnSync(python, ['-m', 'venv', '--without-pip', VENV], { stdio: 'inherit' }).status === 0 &&
    spawnSync(python, ['-m', 'pip', '--python', path.join(VENV, 'bin', 'python'), ...install], { stdio: 'inherit' })
      .status === 0;
  if (!lean) {
    fs.rmSync(VENV, { recursive: true, force: true });
    const venv = spawnSync(python, ['-m', 'venv', VENV], { stdio: 'inherit' });
    if (venv.error || venv.status !== 0)
      throw new Error(
        `could not create a Python virtual environment with \`${python} -m venv\`. Install Python 3.9+ with its ` +
          'venv module (Debian/Ubuntu: `apt-get install -y python3-venv`) or set PYTHON to a Python 3 that has it.',
      );
    const pip = spawnSync(path.join(VENV, 'bin', 'python'), ['-m', 'pip', ...install], { stdio: 'inherit' });
    if (pip.error || pip.status !== 0)
      throw new Error(
        `pip could not install schemathesis==${SCHEMATHESIS_VERSION} (see above). It needs PyPI (or PIP_INDEX_URL) ` +
          `to be reachable; remove ${VENV} and run \`npm run contract\` again.`,
      );
  }
  fs.writeFileSync(marker, SCHEMATHESIS_VERSION);
  return st;
}

/** A webhook receiver on loopback that accepts everything, so deliveries and test sends succeed. */
export async function receiver(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function must(res: Promise<{ status: number; text: string }>, what: string) {
  const r = await res;
  if (r.status >= 300) throw new Error(`contract: seeding failed at ${what}: ${r.status} ${r.text}`);
  // The few fields seeding reads back: created records' ids and a list's first id.
  return r as { status: number; text: string; body: { id: string; data: { id: string }[] } };
}

/** An app with something behind every path parameter the fuzzer fills in. */
async function seed(adminKey: string, hookUrl: string) {
  const app = await createTestApp('Contract app');
  const base = `/apps/${app.id}`;
  const key = app.api_key;
  await seedCatalog(app);
  await must(post(`${base}/incentives`, key, { id: 'promo', name: 'Promo' }), 'incentive');
  await must(post(`${base}/incentives/promo/entitlements`, key, { id: 'api_calls', max: 5000 }), 'incentive limit');
  await createAccount(app, { id: 'alice', name: 'Alice', plan: 'pro' });
  await createAccount(app, { id: 'bob', name: 'Bob', plan: 'free', incentive: 'promo' });
  await connectProvider(app);
  await must(call('PATCH', base, { token: key, body: { checkout_url: 'https://shop.example/pricing' } }), 'app');
  await must(
    post(`${base}/offers`, key, {
      id: 'launch',
      name: 'Launch',
      plans: [{ plan: 'pro', prices: [{ interval: 'month', amount: 19 }] }],
    }),
    'offer',
  );
  await must(post(`${base}/offers/launch/publish`, key), 'publish');
  const checkout = await must(
    post(`${base}/offers/launch/checkout`, app.public_key, { plan: 'pro', interval: 'month', account: 'bob' }),
    'checkout',
  );
  await must(post(`${base}/cancel-flows`, key, {}), 'cancel flow');
  await must(call('PATCH', `${base}/cancel-flows/default`, { token: key, body: { status: 'active' } }), 'flow on');
  const session = await must(post(`${base}/cancel-sessions`, key, { account: 'alice' }), 'cancel session');
  const hook = await must(post(`${base}/webhooks`, key, { url: hookUrl, events: ['*'] }), 'webhook');
  await must(post(`${base}/webhooks/${hook.body.id}/test`, key, { type: 'account.updated' }), 'test send');
  const deliveries = await must(call('GET', `${base}/webhooks/${hook.body.id}/deliveries`, { token: key }), 'list');
  await must(
    call('PUT', `${base}/agent/threads/t1`, { token: adminKey, body: { user_id: 'u1', title: 'Hello', messages: [] } }),
    'agent thread',
  );
  const report = await must(post(`${base}/analytics/reports`, key, { name: 'Weekly', interval: '7d' }), 'report');
  const org = await must(post('/orgs', adminKey, { id: 'org1', name: 'Org', app_ids: [app.id] }), 'org');
  // A second app, deleted and re-keyed by the destructive pass only.
  const doomed = await createTestApp('Contract app (destructive pass)');
  return {
    app,
    doomed,
    params: {
      appId: app.id,
      accountId: 'alice',
      planId: 'pro',
      entitlementId: 'api_calls',
      addonId: 'priority',
      incentiveId: 'promo',
      offerId: 'launch',
      flowId: 'default',
      checkoutId: checkout.body.id as string,
      sessionId: session.body.id as string,
      webhookId: hook.body.id as string,
      deliveryId: (deliveries.body.data[0]?.id as string) ?? 'whd_missing',
      threadId: 't1',
      id: report.body.id as string,
      orgId: org.body.id as string,
    },
  };
}

export interface Pass {
  name: string;
  credential: string;
  /** Operation ids to run (a regex). */
  include?: string;
  exclude?: string;
  params: Record<string, string>;
  /** Schemathesis phases (default: all). */
  phases?: string;
  /** Examples per operation in the fuzzing phase (default: EXAMPLES). */
  examples?: number;
}

function tomlString(v: string): string {
  return JSON.stringify(v);
}

export function runPass(st: string, baseUrl: string, pass: Pass, reportDir: string): Promise<number> {
  // Path parameters name the seeded records; the checked-in config adds the written exclusions.
  const overrides = path.join(reportDir, `${pass.name}.toml`);
  const shared = fs.readFileSync(CONFIG, 'utf8');
  fs.writeFileSync(
    overrides,
    [
      shared,
      '',
      '[parameters]',
      ...Object.entries(pass.params).map(([k, v]) => `${tomlString(`path.${k}`)} = ${tomlString(v)}`),
      // `cursor` is a `next_cursor` a list answered (opaque; a made-up one is 400 naming it, as Stripe refuses a
      // `starting_after` that names nothing). Pinned to a well-formed one, it reaches the page query like any other;
      // its id is digits, as the lists ordered by a sequence (the timeline, the credits ledger) have.
      `"query.cursor" = ${tomlString(encodeCursor({ at: '2026-01-01T00:00:00.000000Z', id: '1' }))}`,
      '',
    ].join('\n'),
  );
  // No `--checks`: every check is on by default (the same as `--checks all`), and only so can the checked-in file
  // turn one off for one operation (a `--checks` option would beat the file). `--workers 1`: Hypothesis is not
  // thread-safe in every strategy (a second worker made it fail on its own, not on the service).
  const args = [
    '--config-file',
    overrides,
    'run',
    `${baseUrl}/openapi.json`,
    '--url',
    baseUrl,
    '--max-examples',
    String(pass.examples ?? EXAMPLES),
    '--seed',
    SEED,
    '--workers',
    '1',
    '--max-failures',
    '200',
    '--request-timeout',
    '30',
    '-H',
    `Authorization: Bearer ${pass.credential}`,
    '--report',
    'junit',
    '--report-dir',
    path.join(reportDir, pass.name),
    ...(pass.phases ? ['--phases', pass.phases] : []),
    ...(pass.include ? ['--include-operation-id-regex', pass.include] : []),
    ...(pass.exclude ? ['--exclude-operation-id-regex', pass.exclude] : []),
  ];
  process.stdout.write(`\ncontract: ${pass.name} pass\n`);
  return new Promise((resolve) => {
    const child = spawn(st, args, { stdio: 'inherit', env: stEnv() });
    child.on('exit', (code) => resolve(code ?? 1));
  });
}

/**
 * The fuzzer's environment: the few variables a Python program needs, not the suite's. `requests` reads every
 * variable on every request (looking for proxy settings), about a twentieth of the fuzzer's CPU with the suite's
 * environment; and a proxy set for the machine must not carry requests to the loopback servers.
 */
function stEnv(): NodeJS.ProcessEnv {
  const keep = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'LC_CTYPE', 'TMPDIR', 'PYTHONHASHSEED', 'PYTHONDONTWRITEBYTECODE'];
  return {
    ...Object.fromEntries(keep.filter((k) => process.env[k] !== undefined).map((k) => [k, process.env[k]])),
    SCHEMATHESIS_HOOKS: '',
  };
}

interface Operation {
  operationId: string;
  'x-credentials': string[];
  parameters?: unknown[];
  requestBody?: unknown;
}
type Doc = { paths: Record<string, Record<string, Operation>> };

/** Operation ids whose credentials, method and path satisfy `pred`, in the document's order. */
function operationIds(doc: Doc, pred: (creds: string[], method: string, path: string) => boolean): string[] {
  const ids: string[] = [];
  for (const [p, ops] of Object.entries(doc.paths))
    for (const [m, op] of Object.entries(ops))
      if (pred(op['x-credentials'], m.toUpperCase(), p)) ids.push(op.operationId);
  return ids;
}

const alternation = (ids: string[]) => `^(${ids.map((id) => id.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})$`;

/**
 * The operations cut into `count` parts of about equal work. The boundary-coverage phase, most of a pass's time,
 * makes a case per boundary of each parameter and body field, so an operation's work is taken as the size of its
 * parameters and body schema; the heaviest go first, each to the lightest part so far. The same document always
 * gives the same parts.
 */
export function operationParts(doc: Doc, ids: string[], count: number): string[][] {
  const weight = new Map<string, number>();
  for (const ops of Object.values(doc.paths))
    for (const op of Object.values(ops))
      weight.set(op.operationId, 200 + JSON.stringify([op.parameters ?? [], op.requestBody ?? {}]).length);
  const parts = Array.from({ length: count }, () => ({ ids: [] as string[], weight: 0 }));
  const heaviest = [...ids].sort((a, b) => weight.get(b)! - weight.get(a)! || a.localeCompare(b));
  for (const id of heaviest) {
    const part = parts.reduce((min, p) => (p.weight < min.weight ? p : min));
    part.ids.push(id);
    part.weight += weight.get(id)!;
  }
  return parts.map((p) => p.ids);
}

/** Seeds the contract app on running test servers and returns the passes to run, in order. */
export async function contractPasses(env: TestEnv, hookUrl: string): Promise<Pass[]> {
  const seeded = await seed(env.adminKey, hookUrl);
  const doc = (await (await fetch(`${env.baseUrl}/openapi.json`)).json()) as Doc;
  // Routes that end the app or its keys for everyone after them run in their own pass on an app of their own.
  const isDestructive = (m: string, p: string) =>
    (m === 'DELETE' && p === '/apps/{appId}') || /\/(keys|public-key)\/regenerate$/.test(p);
  const destructive = alternation(operationIds(doc, (_c, m, p) => isDestructive(m, p)));
  const publishable = alternation(operationIds(doc, (c) => c.includes('P') || c.includes('N')));
  const adminParts = operationParts(
    doc,
    operationIds(doc, (_c, m, p) => !isDestructive(m, p)),
    ADMIN_PARTS,
  );
  const passes: Pass[] = [
    // The admin key reaches every operation: each part runs every phase but the stateful one on its operations.
    ...adminParts.map((ids, i): Pass => ({
      name: `admin-${i + 1}`,
      credential: env.adminKey,
      include: alternation(ids),
      params: seeded.params,
      phases: 'examples,coverage,fuzzing',
    })),
    {
      name: 'admin-stateful',
      credential: env.adminKey,
      exclude: destructive,
      params: seeded.params,
      phases: 'stateful',
    },
    // The coverage phase (boundary values, missing fields, other methods) does not depend on the credential,
    // so it runs once, with the admin key, which reaches every operation. So does the depth of the fuzzing: the
    // admin parts fuzz every operation with EXAMPLES cases; a key's pass sends CREDENTIAL_EXAMPLES to each operation
    // it may call (what differs by credential is who may do what, and every operation's answer to the key is
    // checked), and its stateful phase chains them.
    {
      name: 'secret',
      credential: seeded.app.api_key,
      exclude: destructive,
      params: seeded.params,
      phases: 'examples,fuzzing,stateful',
      examples: CREDENTIAL_EXAMPLES,
    },
    // Every operation that takes the publishable key takes the admin key too, so its coverage ran in an admin part.
    {
      name: 'publishable',
      credential: seeded.app.public_key,
      include: publishable,
      params: seeded.params,
      phases: 'examples,fuzzing,stateful',
      examples: CREDENTIAL_EXAMPLES,
    },
    {
      name: 'destructive',
      credential: seeded.doomed.api_key,
      include: destructive,
      params: { ...seeded.params, appId: seeded.doomed.id },
    },
  ];
  const only = passNames();
  return passes.filter((p) => only.includes(p.name));
}

/**
 * Where each pass writes its JUnit report and overrides: `.test-data/contract/<pass>/`, emptied for the passes about
 * to run (only those: `npm test` runs the passes in two processes at once, and each empties only its own).
 */
export function reportDirectory(passes: string[] = passNames()): string {
  const dir = path.join(ROOT, '.test-data', 'contract');
  for (const name of passes) {
    fs.rmSync(path.join(dir, name), { recursive: true, force: true });
    fs.rmSync(path.join(dir, `${name}.toml`), { force: true });
  }
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

export const CONTRACT_CONFIG = path.relative(ROOT, CONFIG);

async function main() {
  // `--install`: only fetch schemathesis (npm test does so while the checks run).
  if (process.argv.includes('--install')) {
    ensureSchemathesis();
    process.exit(0);
  }
  const started = Date.now();
  const failed: string[] = [];
  let reportDir = '';
  try {
    const st = ensureSchemathesis();
    const env = await startTestEnv();
    const hook = await receiver();
    reportDir = reportDirectory();
    try {
      for (const pass of await contractPasses(env, hook.url))
        if ((await runPass(st, env.baseUrl, pass, reportDir)) !== 0) failed.push(pass.name);
    } finally {
      await hook.close();
      await stopTestEnv();
    }
  } catch (err) {
    fail(err instanceof Error ? err.message : String(err));
  }
  const took = Math.round((Date.now() - started) / 1000);
  if (failed.length)
    fail(
      `schemathesis found failures in the ${failed.join(', ')} pass(es) (${took} s). Fix them, or write a justified ` +
        `exclusion in ${CONTRACT_CONFIG}. Reports: ${path.relative(ROOT, reportDir)}/.`,
    );
  process.stdout.write(`\ncontract: schemathesis found nothing in ${took} s\n`);
  process.exit(0);
}

// Not a top-level await: mocha loads this module (through the fuzz test) with require(), which refuses one.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) void main();
