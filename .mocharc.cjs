module.exports = {
  'node-option': ['import=tsx'],
  require: ['test/helpers/hooks.ts'],
  // The contract fuzzer runs last, after every other file (see test/contract/schemathesis.fuzz.ts).
  spec: ['test/**/*.test.ts', 'test/contract/schemathesis.fuzz.ts'],
  reporter: './test/helpers/reporter.cjs',
  timeout: 30000,
  slow: 2000,
  exit: true,
};
