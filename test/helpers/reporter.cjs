// Mocha's spec reporter, plus one plain closing line that any CI can read: "tests: N passed, N failed, N skipped".
// The failures and that line go to stderr as well: a CI that shows only the tail of stderr (where native
// libraries such as Temporal's core write their own warnings) still shows what failed. Before that line, the
// slowest files with their wall time (hooks included), so a suite that grows slow shows where.
const path = require('node:path');
const Mocha = require('mocha');

const { EVENT_TEST_FAIL, EVENT_SUITE_BEGIN, EVENT_SUITE_END, EVENT_RUN_BEGIN, EVENT_RUN_END } = Mocha.Runner.constants;

class SpecWithSummary extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const failed = [];
    const files = new Map();
    let started = Date.now();
    runner.once(EVENT_RUN_BEGIN, () => (started = Date.now()));
    runner.on(EVENT_SUITE_BEGIN, (suite) => {
      if (suite.file && suite.parent?.root) files.set(suite, Date.now());
    });
    runner.on(EVENT_SUITE_END, (suite) => {
      if (files.has(suite)) files.set(suite, Date.now() - files.get(suite));
    });
    runner.on(EVENT_TEST_FAIL, (test, err) => {
      const first = String((err && err.message) || err)
        .split('\n')[0]
        .slice(0, 300);
      failed.push(`  ✗ ${test.fullTitle()} (${test.file ? path.basename(test.file) : '?'}): ${first}`);
    });
    runner.once(EVENT_RUN_END, () => {
      const s = this.stats;
      const perFile = new Map();
      for (const [suite, ms] of files) {
        const file = path.relative(process.cwd(), suite.file);
        perFile.set(file, (perFile.get(file) ?? 0) + ms);
      }
      const slowest = [...perFile]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 15)
        .map(([file, ms]) => `  ${(ms / 1000).toFixed(1).padStart(7)} s  ${file}`);
      const total = ((Date.now() - started) / 1000).toFixed(0);
      process.stdout.write(`\nslowest files (wall time, hooks included; ${total} s in all):\n${slowest.join('\n')}\n`);
      const summary = `tests: ${s.passes} passed, ${s.failures} failed, ${s.pending} skipped`;
      if (failed.length) process.stderr.write(`\nfailed tests:\n${failed.join('\n')}\n`);
      process.stderr.write(`\n${summary}\n`);
      process.stdout.write(`\n${summary}\n`);
    });
  }
}

module.exports = SpecWithSummary;
