// `npm test`, which CI runs: the builds the tests need, then the mocha suite in three parts that run at the same
// time, each in a mocha process with real servers of its own (PostgreSQL, the Temporal dev server, the worker, the
// API), so the run takes about as long as its longest part instead of the sum. A part alone keeps about 0.7 of a core
// busy (it waits on its servers, timers and the browser), so three fill the two cores; a fourth would only contend.
// The static checks (tsc, eslint, prettier) run beside them at a lower priority; a failed check fails the run.
//
//   npm test                                      # checks, builds, the three parts
//   TEST_GROUPS=2 npm test                        # in two parts (TEST_GROUPS=1: one process, as `npx mocha`)
//   TEST_FILES=test/api/usage.test.ts npx mocha   # one file (or a glob), on servers of its own (no checks)
//   TEST_SCREENSHOTS=1 npm test                   # with the browser tests' screenshots (off in npm test by default)
//
// Each part's whole output goes to .test-data/test-group-N.log; a line per finished file is printed as it ends,
// marked with its part. The last lines are the failed tests of all parts and one
// `tests: N passed, N failed, N skipped`.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureTemporalCli } from '../src/temporal/devserver.js';
import { createLogger } from '../src/logger.js';
import { ensureTestBrowser } from '../test/helpers/chromium.js';
import { ensurePythonSdkVenv } from '../test/helpers/python.js';
import { passNames } from './contract.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const BIN = path.join(ROOT, 'node_modules', '.bin');
const FUZZ = 'test/contract/schemathesis.fuzz.ts';
/**
 * The type checks run TypeScript 7's native compiler (`typescript7`, an alias of typescript@7.0.2): about a third of
 * TypeScript 5's CPU on this code (decision 0572), single-threaded: its parallel checkers each check the shared types
 * again, twice the CPU of one checker on the service (decision 0575). `typescript` (5.9) stays for the tools that import its API
 * (typescript-eslint, openapi-typescript, scripts/conflict-reasons.ts) and for the SDK tests that compile as a user.
 */
const TSC = path.join(ROOT, 'node_modules', 'typescript7', 'bin', 'tsc');

/**
 * Seconds each file took in a whole run on the 2-core development machine, hooks included (the reporter prints them
 * as "slowest files"; measured 2026-11-29 in a clean-clone CI run in three parts, 1,930 s in all). Only used to
 * balance the parts; a file not listed (or under 5 s) counts as 3 s. The fuzzer's passes are shared out too, each
 * at the seconds its own test took in that run (docs/testing.md, "How CI stays fast").
 */
const SECONDS: Record<string, number> = {
  'test/processes/startup.test.ts': 135,
  'test/processes/outages.test.ts': 100,
  'test/browser/console-roles.test.ts': 99,
  'test/browser/console.test.ts': 97,
  'test/processes/topology.test.ts': 64,
  'test/processes/freeze.test.ts': 53,
  'test/browser/console-ops.test.ts': 45,
  'test/api/webhooks.test.ts': 38,
  'test/browser/console-catalog.test.ts': 37,
  'test/api/rollup.test.ts': 37,
  'test/browser/console-billing.test.ts': 36,
  'test/processes/chaos-offline.test.ts': 35,
  'test/sdk/python.test.ts': 34,
  'test/api/cancel-flows.test.ts': 34,
  'test/api/account-actor.test.ts': 34,
  'test/processes/recovery.test.ts': 32,
  'test/browser/elements.test.ts': 29,
  'test/processes/billing-kill.test.ts': 28,
  'test/api/security.test.ts': 28,
  'test/browser/console-pages.test.ts': 26,
  'test/api/test-clock.test.ts': 26,
  'test/processes/stream.test.ts': 25,
  'test/browser/console-credits.test.ts': 25,
  'test/processes/api-and-worker.test.ts': 23,
  'test/api/one-live-subscription.test.ts': 23,
  'test/unit/conflict-reasons.test.ts': 20,
  'test/api/checkouts.test.ts': 20,
  'test/browser/console-analytics.test.ts': 19,
  'test/browser/mcp-apps.test.ts': 16,
  'test/api/mcp-tasks.test.ts': 16,
  'test/api/mcp-conformance-2026.test.ts': 14,
  'test/browser/elements-returns.test.ts': 13,
  'test/processes/upgrade.test.ts': 12,
  'test/api/guards.test.ts': 12,
  'test/api/dunning.test.ts': 12,
  'test/browser/security-headers.test.ts': 11,
  'test/api/subscriptions.test.ts': 11,
  'test/api/invitations.test.ts': 11,
  'test/api/ingest.test.ts': 11,
  'test/sdk/python-local.test.ts': 10,
  'test/processes/temporal-sdk-log.test.ts': 10,
  'test/processes/reuse-port.test.ts': 10,
  'test/browser/elements-live.test.ts': 10,
  'test/api/offers.test.ts': 10,
  'test/unit/boundaries.test.ts': 9,
  'test/processes/credential-cache.test.ts': 9,
  'test/browser/console-test-clock.test.ts': 9,
  'test/api/reservations.test.ts': 9,
  'test/api/plan-changes.test.ts': 9,
  'test/api/credits-draws.test.ts': 9,
  'test/api/credit-entities.test.ts': 9,
  'test/api/counters-sign-in.test.ts': 9,
  'test/api/console-members.test.ts': 9,
  'test/sdk/pack.test.ts': 8,
  'test/sdk/generate.test.ts': 8,
  'test/api/oauth.test.ts': 8,
  'test/api/credit-packs.test.ts': 8,
  'test/processes/mcp-elicitation.test.ts': 7,
  'test/browser/console-packs.test.ts': 7,
  'test/api/mcp-spec-names.test.ts': 7,
  'test/api/usage.test.ts': 6,
  'test/api/mcp.test.ts': 6,
  'test/api/entity-limits.test.ts': 6,
  'test/api/demo-receiver.test.ts': 6,
  'test/api/checkout-hosted-return.test.ts': 6,
  'test/api/billing-sync.test.ts': 6,
  'test/api/access.test.ts': 6,
  'test/sdk/python-generate.test.ts': 5,
  'test/sdk/client.test.ts': 5,
  'contract:admin-1': 65,
  'contract:admin-2': 41,
  'contract:admin-3': 37,
  'contract:admin-stateful': 7,
  'contract:secret': 34,
  'contract:publishable': 24,
  'contract:destructive': 2,
};

export interface Task {
  name: string;
  command: string;
  args: string[];
}

/** Runs a task to its end; `nice`, at a lower priority (nice 10), to use only the CPU the test halves leave idle. */
function run(
  task: Task,
  env: NodeJS.ProcessEnv = process.env,
  nice = false,
): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const [command, args] = nice ? ['nice', ['-n', '10', task.command, ...task.args]] : [task.command, task.args];
    const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('error', (err) => resolve({ code: 1, output: output + String(err) }));
    child.on('close', (code) => resolve({ code: code ?? 1, output }));
  });
}

/**
 * Runs the tasks two at a time (the machine's cores); prints a line as each ends, and a failed one's output. Returns
 * the names of those that failed.
 */
export async function checks(tasks: Task[], nice = false): Promise<string[]> {
  const queue = [...tasks];
  const failed: string[] = [];
  const worker = async () => {
    for (let task = queue.shift(); task; task = queue.shift()) {
      const started = Date.now();
      const { code, output } = await run(task, process.env, nice);
      const took = ((Date.now() - started) / 1000).toFixed(1);
      process.stdout.write(`> ${task.name} (${took} s)${code === 0 ? '' : ` FAILED with exit code ${code}:`}\n`);
      if (code !== 0) {
        failed.push(task.name);
        const log = `.test-data/check-${task.name.replace(/\W+/g, '-')}.log`;
        fs.mkdirSync(path.join(ROOT, '.test-data'), { recursive: true });
        fs.writeFileSync(path.join(ROOT, log), output);
        process.stdout.write(cap(output.endsWith('\n') ? output : `${output}\n`, 5000, log));
      }
    }
  };
  await Promise.all([worker(), worker()]);
  return failed;
}

const npm = (name: string, script: string): Task => ({ name, command: 'npm', args: ['run', script, '--silent'] });
const bin = (name: string, tool: string, ...args: string[]): Task => ({ name, command: path.join(BIN, tool), args });

/** Every test file, as .mocharc.cjs finds them, in name order. */
function testFiles(): string[] {
  return fs
    .globSync('test/**/*.test.ts', { cwd: ROOT })
    .map((f) => f.split(path.sep).join('/'))
    .sort();
}

interface Group {
  files: string[];
  passes: string[];
  seconds: number;
}

/** Splits the files (and the fuzzer's passes) into `count` groups of about equal time, longest first. */
export function split(files: string[], passes: string[], count: number): Group[] {
  const groups: Group[] = Array.from({ length: count }, () => ({ files: [], passes: [], seconds: 0 }));
  const items = [...files, ...passes.map((p) => `contract:${p}`)].sort(
    (a, b) => (SECONDS[b] ?? 3) - (SECONDS[a] ?? 3) || a.localeCompare(b),
  );
  for (const item of items) {
    const group = groups.reduce((min, g) => (g.seconds < min.seconds ? g : min));
    if (item.startsWith('contract:')) group.passes.push(item.slice('contract:'.length));
    else group.files.push(item);
    group.seconds += SECONDS[item] ?? 3;
  }
  for (const g of groups) g.files.sort();
  return groups;
}

/** What the reporter (test/helpers/reporter.cjs) writes last on TEST_PROGRESS_FD. */
export interface GroupResult {
  passed: number;
  failed: number;
  skipped: number;
  seconds: number;
  failures: string[];
  files: Record<string, number>;
  /** Of each file's seconds, those in its own before/after hooks (processes, browsers and data it sets up). */
  hooks?: Record<string, number>;
  /** Seconds the half spent starting and stopping the suite's servers (the root hooks, in no file). */
  servers?: number;
  /** CPU-seconds of each file: the part's whole process tree across the file (test/helpers/reporter.cjs). */
  cpu?: Record<string, number>;
}

/** A half as it ended: its exit code, the reporter's result (none if mocha died first) and its log file. */
export interface Half {
  code: number;
  result?: GroupResult;
  log: string;
}

/** At most `bytes` of a text, cut at a line end, with a pointer to where the rest is. */
export function cap(text: string, bytes: number, rest: string): string {
  if (Buffer.byteLength(text) <= bytes) return text;
  const cut = Buffer.from(text).subarray(0, bytes).toString();
  const head = cut.slice(0, Math.max(cut.lastIndexOf('\n'), 0) || cut.length);
  return `${head}\n… (${Buffer.byteLength(text) - Buffer.byteLength(head)} more bytes in ${rest})\n`;
}

const MAX_FAILURES_SHOWN = 30;

/**
 * The run's last lines: the failed tests (at most 30, the rest are in the logs), the slowest files of all parts,
 * and the totals, the very last line being `tests: N passed, N failed, N skipped`. A CI that keeps only part of the
 * output (the one this project runs on keeps the first 32 KiB) still gets the totals: the whole run prints about
 * 7 KB when it passes and at most about 25 KB when everything fails.
 */
export function closing(halves: Half[], seconds: number, failedChecks: string[] = []): string {
  const totals = { passed: 0, failed: 0, skipped: 0 };
  const failures: string[] = [];
  const files: [string, number, number][] = [];
  const lines: string[] = [];
  const servers: string[] = [];
  const cpu: [string, number][] = [];
  for (const [i, h] of halves.entries()) {
    if (!h.result) {
      lines.push(`a half ended (exit code ${h.code}) without its results: its output is in ${h.log}`);
      continue;
    }
    totals.passed += h.result.passed;
    totals.failed += h.result.failed;
    totals.skipped += h.result.skipped;
    failures.push(...h.result.failures);
    const half = halves.length > 1 ? `[${i + 1}] ` : '';
    const hooks = h.result.hooks ?? {};
    files.push(
      ...Object.entries(h.result.files).map(([file, s]): [string, number, number] => [
        `${half}${file}`,
        s,
        hooks[file] ?? 0,
      ]),
    );
    if (h.result.servers !== undefined) servers.push(`${half}${h.result.servers} s`);
    cpu.push(...Object.entries(h.result.cpu ?? {}).map(([file, c]): [string, number] => [`${half}${file}`, c]));
  }
  const slowest = files
    .sort((a, b) => b[1] - a[1])
    .slice(0, 10)
    .map(
      ([file, s, hooks]) =>
        `  ${s.toFixed(1).padStart(7)} s  ${file}${hooks >= 1 ? ` (${hooks.toFixed(1)} s in its hooks)` : ''}`,
    );
  const out = [`\nslowest files (wall time, hooks included):`, ...slowest];
  if (servers.length) out.push(`the suite's servers, started and stopped: ${servers.join(', ')}`);
  if (cpu.length) {
    // What a file costs the machine, which is what decides the run's length once the cores are full.
    const all = cpu.reduce((sum, [, c]) => sum + c, 0);
    out.push(
      `most CPU (the processes of a part across each file; ${all.toFixed(0)} CPU-s in the files in all):`,
      ...cpu
        .sort((a, b) => b[1] - a[1])
        .slice(0, 10)
        .map(([file, c]) => `  ${c.toFixed(1).padStart(7)} CPU-s  ${file}`),
    );
  }
  if (failures.length) {
    out.push(`\nfailed tests:`, ...failures.slice(0, MAX_FAILURES_SHOWN).map((f) => `  ✗ ${f.slice(0, 900)}`));
    if (failures.length > MAX_FAILURES_SHOWN) out.push(`  … and ${failures.length - MAX_FAILURES_SHOWN} more`);
  }
  out.push(`\nthe whole output of each half: ${halves.map((h) => h.log).join(', ')}`, ...lines);
  // The static checks ran beside the suite: a failed one fails the run however the tests went.
  if (failedChecks.length) out.push(`\nfailed checks (their output is above): ${failedChecks.join(', ')}`);
  const minutes = Math.max(1, Math.round(seconds / 60));
  out.push(`\n  ${totals.passed} passing (${minutes}m)`);
  if (totals.skipped) out.push(`  ${totals.skipped} pending`);
  if (totals.failed) out.push(`  ${totals.failed} failing`);
  out.push(`\nnpm test: ${seconds.toFixed(0)} s`);
  const incomplete = halves.some((h) => !h.result) ? ' (a half ended without its results: see above)' : '';
  out.push(`tests: ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped${incomplete}`);
  return `${out.join('\n')}\n`;
}

/** The marker in front of the reporter's progress lines (test/helpers/reporter.cjs). */
const PROGRESS = '\u001eprogress\u001e ';

/**
 * Runs one half: mocha's whole output (spec reporter, service logs, native libraries' warnings) goes to its log file;
 * the reporter's line per finished file is taken out of its stdout and printed with the half's number.
 */
export function runHalf(
  env: NodeJS.ProcessEnv,
  log: string,
  print: (text: string) => void,
  args: string[] = [],
): Promise<Half> {
  return new Promise((resolve) => {
    const file = fs.createWriteStream(path.join(ROOT, log));
    const child = spawn(path.join(BIN, 'mocha'), args, {
      cwd: ROOT,
      env: { ...env, TEST_PROGRESS: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let result: GroupResult | undefined;
    let partial = '';
    child.stdout.on('data', (d: Buffer) => {
      const lines = (partial + d.toString()).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        if (!line.startsWith(PROGRESS)) file.write(`${line}\n`);
        else if (line.startsWith(`${PROGRESS}{"result"`))
          result = (JSON.parse(line.slice(PROGRESS.length)) as { result: GroupResult }).result;
        else print(`${line.slice(PROGRESS.length)}\n`);
      }
    });
    child.stderr.on('data', (d: Buffer) => file.write(d));
    let ended = false;
    const done = (code: number) => {
      if (ended) return;
      ended = true;
      file.end(partial, () => {
        if (!result) {
          // Mocha died before its reporter ended (servers that never started, a crash): show why, briefly.
          const text = fs.readFileSync(path.join(ROOT, log), 'utf8');
          print(`ended with exit code ${code} and no results; the end of ${log}:\n`);
          print(cap(text.split('\n').slice(-60).join('\n'), 6000, log));
        }
        resolve({ code, result, log });
      });
    };
    child.on('close', (code) => done(code ?? 1));
    child.on('error', () => done(1));
  });
}

async function main(): Promise<void> {
  const started = Date.now();
  // Node's module compile cache for every process the run starts (the parts, the services the process tests start
  // over and over, the checks): the V8 code of each module compiled once is kept on disk and loaded, not compiled,
  // by the next process. A service start's CPU is mostly loading modules (about a sixth less with it). The directory
  // is Node's own default for it; a stale entry (another file's content, another Node) is not used.
  process.env.NODE_COMPILE_CACHE ??= path.join(os.tmpdir(), 'node-compile-cache');
  // Tools the suite runs, fetched or built once per machine: the Temporal CLI (Go), schemathesis (PyPI)
  // and Chromium (apt) for the browser tests, here and not in each part, so two parts never install the same thing
  // at once.
  process.env.TEMPORAL_CLI = ensureTemporalCli(process.env.TEMPORAL_CLI, createLogger('info'));
  // The headless shell (or Chromium) for the browser tests, installed beside the builds when missing.
  const browser = ensureTestBrowser();
  browser.catch(() => {}); // awaited before the suite starts, which then says why
  const tools = run({
    name: 'schemathesis',
    command: path.join(BIN, 'tsx'),
    args: ['scripts/contract.ts', '--install'],
  });
  // The Python SDK's pinned environment (test/sdk/python.test.ts would make it too), beside the checks.
  const python = ensurePythonSdkVenv().then(
    () => ({ code: 0, output: '' }),
    (err: unknown) => ({ code: 1, output: err instanceof Error ? err.message : String(err) }),
  );

  const sdk = await run(npm('the SDK', 'sdk:build'));
  if (sdk.code !== 0) {
    process.stdout.write(cap(sdk.output, 8000, 'the output of `npm run sdk:build`'));
    throw new Error('building the SDK failed');
  }
  // The static checks need only the SDK's build: they start now, at nice 10, beside the builds and then the suite,
  // on the CPU those leave idle (a half keeps 0.5 to 0.8 of a core busy); a failed one fails the run at its end.
  const statics = checks(
    [
      { name: 'types: service', command: TSC, args: ['-p', '.', '--singleThreaded'] },
      { name: 'types: console', command: TSC, args: ['-p', 'console', '--singleThreaded'] },
      { name: 'types: elements', command: TSC, args: ['-p', 'packages/elements', '--singleThreaded'] },
      bin('lint', 'eslint', '.'),
      bin('format', 'prettier', '--check', '.'),
    ],
    true,
  );
  // What the tests need first.
  const built = await checks([
    bin('build: console', 'vite', 'build', '--config', 'console/vite.config.ts', '--logLevel', 'warn'),
    npm('build: elements', 'build:elements'),
    // The bundle the service processes of the tests run, as `npm start` does (scripts/build-service.ts); the parts'
    // root hooks then find it current.
    npm('build: service', 'build:service'),
    // Builds helm into .tools the first time (minutes, beside the other checks; docs/benchmarks.md), then lints and
    // renders the chart; test/processes/helm.test.ts checks what it renders.
    bin('helm: lint, template', 'tsx', 'scripts/go-tools.ts', 'helm-check'),
    // The Temporal server and its SQL tool for test/processes/topology.test.ts, built the first time (minutes, likewise).
    bin('build: temporal server', 'tsx', 'scripts/go-tools.ts', 'temporal-server'),
    // On CI (a fresh clone, after `npm install`): the install changed nothing that is committed, the lockfile above
    // all (a missing optional entry is rewritten by every fresh install). Before the suite writes anything.
    ...(process.env.CI === 'true' && fs.existsSync(path.join(ROOT, '.git'))
      ? [{ name: 'clean after install', command: 'git', args: ['diff', '--exit-code', '--stat', 'HEAD', '--'] }]
      : []),
  ]);
  const ok = built.length === 0;
  const installed = await tools;
  if (installed.code !== 0) process.stdout.write(cap(installed.output, 4000, 'the output of `npm run contract`'));
  const venv = await python;
  if (venv.code !== 0) process.stdout.write(cap(venv.output, 4000, 'the Python SDK environment'));
  if (!ok || installed.code !== 0 || venv.code !== 0) {
    await statics; // their output too, so that one run shows every problem
    process.stderr.write('\nnpm test: a build failed (see above); the suite did not run\n');
    process.exit(1);
  }

  process.env.CHROMIUM_PATH = await browser;
  const count = Math.max(1, Number(process.env.TEST_GROUPS ?? 3) || 3);
  const passes = passNames();
  const groups = split(testFiles(), passes, count);
  fs.mkdirSync(path.join(ROOT, '.test-data'), { recursive: true });
  const logs = groups.map((_, i) => `.test-data/test-group-${i + 1}.log`);
  process.stdout.write(
    `\nnpm test: the builds took ${((Date.now() - started) / 1000).toFixed(0)} s (the static checks go on beside ` +
      `the suite); the suite runs in ` +
      `${count === 1 ? 'one process' : count === 2 ? 'two halves at once' : `${count} parts at once`}, ` +
      `a line per test file as it ends (\`tail -f ${logs.join('` or `')}\` shows each whole):\n` +
      groups
        .map((g, i) => `  [${i + 1}] ${g.files.length} files, contract passes ${g.passes.join(', ') || 'none'}`)
        .join('\n') +
      '\n',
  );

  const halves = await Promise.all(
    groups.map((group, i) =>
      runHalf(
        {
          ...process.env,
          TEST_GROUP: String(i + 1),
          TEST_FILES: [...group.files, ...(group.passes.length ? [FUZZ] : [])].join(','),
          CONTRACT_ONLY: group.passes.join(','),
          // Nobody looks at CI's screenshots; `TEST_SCREENSHOTS=1 npm test` takes them (test/helpers/browser.ts).
          TEST_SCREENSHOTS: process.env.TEST_SCREENSHOTS ?? '0',
        },
        logs[i],
        (text) => process.stdout.write(count === 1 ? text : text.replace(/^(?=.)/gm, `[${i + 1}] `)),
      ),
    ),
  );
  const failedChecks = await statics;
  const code = halves.every((h) => h.code === 0 && h.result) && failedChecks.length === 0 ? 0 : 1;
  process.stdout.write(closing(halves, (Date.now() - started) / 1000, failedChecks));
  process.exit(code);
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  main().catch((err: unknown) => {
    process.stderr.write(`\nnpm test: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
