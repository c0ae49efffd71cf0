// Mocha's spec reporter, plus one plain closing line that any CI can read: "tests: N passed, N failed, N skipped".
// The failures and that line go to stderr as well: a CI that shows only the tail of stderr (where native
// libraries such as Temporal's core write their own warnings) still shows what failed. Before that line, the
// slowest files with their wall time (hooks included), so a suite that grows slow shows where.
//
// With TEST_PROGRESS set (scripts/test.ts sets it, and keeps the rest of the output in a log file), it also writes one
// line per test file as each file ends ("✔ test/api/usage.test.ts: 18 passed (11.2 s)"), and at the end one JSON line,
// {"result": {passed, failed, skipped, seconds, failures: [...], files: {file: seconds}}}, each on stdout behind the
// PROGRESS marker, which scripts/test.ts takes off. (Not a descriptor of its own: mocha starts a second Node process
// for its node options, and passes it only stdin, stdout and stderr.)
const fs = require('node:fs');
const path = require('node:path');
const Mocha = require('mocha');

const {
  EVENT_TEST_FAIL,
  EVENT_TEST_PASS,
  EVENT_TEST_PENDING,
  EVENT_SUITE_BEGIN,
  EVENT_SUITE_END,
  EVENT_RUN_BEGIN,
  EVENT_RUN_END,
  EVENT_HOOK_BEGIN,
  EVENT_HOOK_END,
} = Mocha.Runner.constants;

const PROGRESS = '\u001eprogress\u001e ';

/**
 * CPU-seconds this mocha process and every process under it have used so far (their user and system time, and that
 * of the children they have reaped), read from /proc; undefined where there is none. A part runs its files one after
 * another, so the difference across a file is that file's cost: the API and worker in this process, the processes it
 * starts, and its share of PostgreSQL, Temporal and Chromium's work. Unlike wall time, it holds on a loaded machine.
 */
function treeCpuSeconds() {
  let pids;
  try {
    pids = fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  } catch {
    return undefined;
  }
  const parent = new Map();
  const ticks = new Map();
  for (const pid of pids) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parent.set(pid, f[1]);
      ticks.set(pid, Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]));
    } catch {
      // gone meanwhile
    }
  }
  const inTree = (pid) => {
    for (let p = pid, hops = 0; p && p !== '0' && hops < 64; p = parent.get(p), hops++)
      if (p === String(process.pid)) return true;
    return false;
  };
  let total = 0;
  for (const [pid, t] of ticks) if (inTree(pid)) total += t;
  return total / 100; // USER_HZ is 100 on Linux
}

const fileOf = (runnable) => (runnable && runnable.file ? path.relative(process.cwd(), runnable.file) : '?');

/**
 * A failure in one line: the error's first line and, for a browser action that timed out, what it waited for and the
 * last thing Playwright's call log saw (which element took the click, which state it waited for): the reason a run on
 * another machine failed, when only this summary is kept.
 */
function failureText(err) {
  const lines = String((err && err.message) || err).split('\n');
  const first = lines[0].slice(0, 300);
  const at = lines.findIndex((l) => l.trim() === 'Call log:');
  if (at < 0) return first;
  const log = lines
    .slice(at + 1)
    .map((l) => l.trim().replace(/^- /, ''))
    .filter((l) => l && !/^(retrying|waiting \d+ ?ms)/.test(l));
  const waiting = log.find((l) => l.startsWith('waiting for'));
  const last = log.filter((l) => l !== waiting).slice(-2);
  return [first, waiting, ...last]
    .filter(Boolean)
    .map((l) => l.slice(0, 200))
    .join(' | ');
}

class SpecWithSummary extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const progress = (line) => process.env.TEST_PROGRESS && process.stdout.write(`${PROGRESS}${line}\n`);
    const failures = [];
    /**
     * Per file: wall time of its top-level suites (hooks included), the part of it spent in its own before/after
     * hooks (starting processes, browsers, seeding), and its tests' outcomes.
     */
    const perFile = new Map();
    const entry = (file) => {
      if (!perFile.has(file)) perFile.set(file, { ms: 0, hookMs: 0, cpu: 0, passed: 0, failed: 0, skipped: 0 });
      return perFile.get(file);
    };
    // The root hooks (test/helpers/hooks.ts: the suite's servers start and stop) belong to no file.
    let rootHookMs = 0;
    const hookBegun = new Map();
    runner.on(EVENT_HOOK_BEGIN, (hook) => hookBegun.set(hook, Date.now()));
    runner.on(EVENT_HOOK_END, (hook) => {
      const ms = Date.now() - (hookBegun.get(hook) ?? Date.now());
      hookBegun.delete(hook);
      if (!hook.parent || hook.parent.root) rootHookMs += ms;
      else entry(fileOf(hook.parent)).hookMs += ms;
    });
    const begun = new Map();
    let current;
    let cpuMark;
    const flush = () => {
      if (current === undefined) return;
      const e = perFile.get(current);
      const cpuNow = treeCpuSeconds();
      // A process that leaves the tree while it runs (orphaned, so no parent here reaps it) takes its CPU with it: the
      // sum then drops, and the file is charged nothing rather than less than nothing.
      if (cpuNow !== undefined && cpuMark !== undefined) e.cpu += Math.max(0, cpuNow - cpuMark);
      cpuMark = cpuNow;
      const counts = [`${e.passed} passed`, ...(e.failed ? [`${e.failed} failed`] : [])];
      if (e.skipped) counts.push(`${e.skipped} skipped`);
      const hooks = e.hookMs >= 1000 ? `, ${(e.hookMs / 1000).toFixed(1)} s of it in hooks` : '';
      const cpu = cpuMark !== undefined ? `, ${e.cpu.toFixed(1)} CPU-s` : '';
      progress(
        `${e.failed ? '✗' : '✔'} ${current}: ${counts.join(', ')} (${(e.ms / 1000).toFixed(1)} s${hooks}${cpu})`,
      );
      current = undefined;
    };
    let started = Date.now();
    runner.once(EVENT_RUN_BEGIN, () => (started = Date.now()));
    runner.on(EVENT_SUITE_BEGIN, (suite) => {
      if (!suite.file || !suite.parent?.root) return;
      const file = fileOf(suite);
      if (current !== file) flush();
      // The first file starts counting after the root hooks (the suite's servers) have started.
      if (cpuMark === undefined) cpuMark = treeCpuSeconds();
      current = file;
      entry(file);
      begun.set(suite, Date.now());
    });
    runner.on(EVENT_SUITE_END, (suite) => {
      if (begun.has(suite)) entry(fileOf(suite)).ms += Date.now() - begun.get(suite);
    });
    runner.on(EVENT_TEST_PASS, (test) => entry(fileOf(test)).passed++);
    runner.on(EVENT_TEST_PENDING, (test) => entry(fileOf(test)).skipped++);
    runner.on(EVENT_TEST_FAIL, (test, err) => {
      entry(fileOf(test)).failed++;
      const line = `${test.fullTitle()} (${test.file ? path.basename(test.file) : '?'}): ${failureText(err)}`;
      failures.push(line);
    });
    runner.once(EVENT_RUN_END, () => {
      flush();
      const s = this.stats;
      const slowest = [...perFile]
        .sort((a, b) => b[1].ms - a[1].ms)
        .slice(0, 15)
        .map(([file, e]) => `  ${(e.ms / 1000).toFixed(1).padStart(7)} s  ${file}`);
      const seconds = Math.round((Date.now() - started) / 1000);
      process.stdout.write(
        `\nslowest files (wall time, hooks included; ${seconds} s in all, ${Math.round(rootHookMs / 1000)} s of it ` +
          `starting and stopping the suite's servers):\n${slowest.join('\n')}\n`,
      );
      const summary = `tests: ${s.passes} passed, ${s.failures} failed, ${s.pending} skipped`;
      if (failures.length) process.stderr.write(`\nfailed tests:\n${failures.map((f) => `  ✗ ${f}`).join('\n')}\n`);
      process.stderr.write(`\n${summary}\n`);
      process.stdout.write(`\n${summary}\n`);
      const files = Object.fromEntries([...perFile].map(([file, e]) => [file, Math.round(e.ms / 100) / 10]));
      const hooks = Object.fromEntries([...perFile].map(([file, e]) => [file, Math.round(e.hookMs / 100) / 10]));
      const servers = Math.round(rootHookMs / 1000);
      const cpu = Object.fromEntries([...perFile].map(([file, e]) => [file, Math.round(e.cpu * 10) / 10]));
      const result = {
        passed: s.passes,
        failed: s.failures,
        skipped: s.pending,
        seconds,
        failures,
        files,
        hooks,
        servers,
        cpu,
      };
      progress(JSON.stringify({ result }));
    });
  }
}

module.exports = SpecWithSummary;
module.exports.PROGRESS = PROGRESS;
module.exports.failureText = failureText;
