// `npm test`, which CI runs: the static checks and builds, then the mocha suite in two halves that run at the same
// time, each in a mocha process with real servers of its own (PostgreSQL, the Temporal dev server, the worker, the
// API), so the run takes about as long as its longer half instead of the sum.
//
//   npm test                                   # checks, builds, both halves
//   TEST_GROUPS=1 npm test                     # checks, builds, the whole suite in one process (as `npx mocha`)
//   npx mocha test/usage.test.ts               # one file, on servers of its own (no checks)
//
// The first half's output streams as it comes; the second half's is kept in .test-data/test-group-2.log and printed
// once the first is done. The last lines are the failed tests of both and one `tests: N passed, N failed, N skipped`.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ensureTemporalCli } from '../src/temporal/devserver.js';
import { createLogger } from '../src/logger.js';
import { ensureChromium } from '../test/helpers/chromium.js';
import { PASS_NAMES } from './contract.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const BIN = path.join(ROOT, 'node_modules', '.bin');
const FUZZ = 'test/contract/schemathesis.fuzz.ts';

/**
 * Seconds each file took in a whole run on the 2-core development machine, hooks included (the reporter prints them
 * as "slowest files"; measured 2026-11-23, 846 s in all). Only used to balance the halves; a file not listed
 * counts as 3 s. The fuzzer's passes are shared out too.
 */
const SECONDS: Record<string, number> = {
  'test/startup.test.ts': 105,
  'test/console-browser.test.ts': 95,
  'test/outages.test.ts': 92,
  'test/elements-browser.test.ts': 38,
  'test/webhooks.test.ts': 37,
  'test/cancel-flows.test.ts': 29,
  'test/rollup.test.ts': 24,
  'test/security.test.ts': 20,
  'test/checkouts.test.ts': 19,
  'test/subscriptions.test.ts': 12,
  'test/usage.test.ts': 11,
  'test/credential-cache.test.ts': 10,
  'test/processes.test.ts': 10,
  'test/ingest.test.ts': 10,
  'test/sdk-pack.test.ts': 10,
  'test/incentive-expiry.test.ts': 7,
  'test/reservations.test.ts': 7,
  'test/demo-receiver.test.ts': 6,
  'test/sdk-generate.test.ts': 6,
  'contract:admin': 150,
  'contract:secret': 40,
  'contract:publishable': 27,
  'contract:destructive': 5,
};

interface Task {
  name: string;
  command: string;
  args: string[];
}

function run(task: Task, env: NodeJS.ProcessEnv = process.env): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(task.command, task.args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('error', (err) => resolve({ code: 1, output: output + String(err) }));
    child.on('close', (code) => resolve({ code: code ?? 1, output }));
  });
}

/** Runs the tasks two at a time (the machine's cores); prints each one's output when it ends. */
async function checks(tasks: Task[]): Promise<boolean> {
  const queue = [...tasks];
  let ok = true;
  const worker = async () => {
    for (let task = queue.shift(); task; task = queue.shift()) {
      const started = Date.now();
      const { code, output } = await run(task);
      const took = ((Date.now() - started) / 1000).toFixed(1);
      process.stdout.write(`\n> ${task.name} (${took} s)${code === 0 ? '' : ` FAILED with exit code ${code}`}\n`);
      if (output.trim()) process.stdout.write(output.endsWith('\n') ? output : `${output}\n`);
      if (code !== 0) ok = false;
    }
  };
  await Promise.all([worker(), worker()]);
  return ok;
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

const SUMMARY = /^tests: (\d+) passed, (\d+) failed, (\d+) skipped$/m;

async function main(): Promise<void> {
  const started = Date.now();
  // Tools the suite runs, fetched or built once per machine: the Temporal CLI (Go), schemathesis (PyPI)
  // and Chromium (apt) for the browser tests, here and not in each half, so two halves never install the same thing
  // at once.
  process.env.TEMPORAL_CLI = ensureTemporalCli(process.env.TEMPORAL_CLI, createLogger('info'));
  process.env.CHROMIUM_PATH = ensureChromium();
  const tools = run({
    name: 'schemathesis',
    command: path.join(BIN, 'tsx'),
    args: ['scripts/contract.ts', '--install'],
  });

  const sdk = await run(npm('the SDK', 'sdk:build'));
  if (sdk.code !== 0) {
    process.stdout.write(sdk.output);
    throw new Error('building the SDK failed');
  }
  const ok = await checks([
    bin('types: service', 'tsc', '-p', '.'),
    bin('types: console', 'tsc', '-p', 'console'),
    bin('types: elements', 'tsc', '-p', 'packages/elements'),
    bin('lint', 'eslint', '.'),
    bin('format', 'prettier', '--check', '.'),
    bin('build: console', 'vite', 'build', '--config', 'console/vite.config.ts', '--logLevel', 'warn'),
    npm('build: elements', 'build:elements'),
  ]);
  const installed = await tools;
  if (installed.code !== 0) process.stdout.write(installed.output);
  if (!ok || installed.code !== 0) {
    process.stderr.write('\nnpm test: a check or build failed (see above); the suite did not run\n');
    process.exit(1);
  }

  const count = Math.max(1, Number(process.env.TEST_GROUPS ?? 2) || 2);
  const passes = process.env.CONTRACT_ONLY?.split(',') ?? PASS_NAMES;
  const groups = split(testFiles(), passes, count);
  const logDir = path.join(ROOT, '.test-data');
  fs.mkdirSync(logDir, { recursive: true });
  process.stdout.write(
    `\nnpm test: checks and builds took ${((Date.now() - started) / 1000).toFixed(0)} s; the suite runs in ` +
      `${count === 1 ? 'one process' : count === 2 ? 'two halves at once' : `${count} parts at once`}:\n` +
      groups
        .map((g, i) => `  ${i + 1}: ${g.files.length} files, contract passes ${g.passes.join(', ') || 'none'}`)
        .join('\n') +
      '\n',
  );

  const results = await Promise.all(
    groups.map((group, i) => {
      const env = {
        ...process.env,
        TEST_GROUP: String(i + 1),
        TEST_FILES: [...group.files, ...(group.passes.length ? [FUZZ] : [])].join(','),
        CONTRACT_ONLY: group.passes.join(','),
      };
      if (i === 0) {
        // The first half streams; its output is also kept to read its summary.
        return new Promise<{ code: number; output: string }>((resolve) => {
          const child = spawn(path.join(BIN, 'mocha'), [], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
          let output = '';
          child.stdout.on('data', (d: Buffer) => (process.stdout.write(d), (output += d.toString())));
          child.stderr.on('data', (d: Buffer) => (process.stderr.write(d), (output += d.toString())));
          child.on('close', (code) => resolve({ code: code ?? 1, output }));
        });
      }
      return run({ name: `group ${i + 1}`, command: path.join(BIN, 'mocha'), args: [] }, env).then((r) => {
        fs.writeFileSync(path.join(logDir, `test-group-${i + 1}.log`), r.output);
        return r;
      });
    }),
  );
  for (const [i, r] of results.entries())
    if (i > 0)
      process.stdout.write(`\n===== the suite's half ${i + 1} (.test-data/test-group-${i + 1}.log) =====\n${r.output}`);

  const totals = [0, 0, 0];
  const failedLines: string[] = [];
  let missing = false;
  for (const r of results) {
    const m = SUMMARY.exec(r.output);
    if (!m) missing = true;
    else for (let k = 0; k < 3; k++) totals[k] += Number(m[k + 1]);
    failedLines.push(...new Set(r.output.split('\n').filter((l) => l.startsWith('  ✗ '))));
  }
  const code = results.every((r) => r.code === 0) && !missing ? 0 : 1;
  const took = ((Date.now() - started) / 1000).toFixed(0);
  const summary =
    `tests: ${totals[0]} passed, ${totals[1]} failed, ${totals[2]} skipped` +
    (missing ? ' (a half ended without its summary: see its output above)' : '');
  const tail = `${failedLines.length ? `\nfailed tests:\n${failedLines.join('\n')}\n` : ''}\nnpm test: ${took} s\n${summary}\n`;
  process.stderr.write(tail);
  process.stdout.write(tail);
  process.exit(code);
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  main().catch((err: unknown) => {
    process.stderr.write(`\nnpm test: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
