// Mocha's spec reporter, plus one plain closing line that any CI can read: "tests: N passed, N failed, N skipped".
// The failures and that line go to stderr as well: a CI that shows only the tail of stderr (where native
// libraries such as Temporal's core write their own warnings) still shows what failed.
const Mocha = require('mocha');

class SpecWithSummary extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const failed = [];
    runner.on(Mocha.Runner.constants.EVENT_TEST_FAIL, (test, err) => {
      const first = String((err && err.message) || err)
        .split('\n')[0]
        .slice(0, 300);
      failed.push(`  ✗ ${test.fullTitle()} (${test.file ? require('node:path').basename(test.file) : '?'}): ${first}`);
    });
    runner.once(Mocha.Runner.constants.EVENT_RUN_END, () => {
      const s = this.stats;
      const summary = `tests: ${s.passes} passed, ${s.failures} failed, ${s.pending} skipped`;
      if (failed.length) process.stderr.write(`\nfailed tests:\n${failed.join('\n')}\n`);
      process.stderr.write(`\n${summary}\n`);
      process.stdout.write(`\n${summary}\n`);
    });
  }
}

module.exports = SpecWithSummary;
