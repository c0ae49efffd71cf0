module.exports = {
  'node-option': ['import=tsx'],
  require: ['test/helpers/hooks.ts'],
  // The contract fuzzer runs last, after every other file (see test/contract/schemathesis.fuzz.ts). `npm test`
  // (scripts/test.ts) runs the suite in two halves at once and names each half's files in TEST_FILES.
  spec: process.env.TEST_FILES
    ? process.env.TEST_FILES.split(',')
    : ['test/**/*.test.ts', 'test/contract/schemathesis.fuzz.ts'],
  reporter: './test/helpers/reporter.cjs',
  timeout: 30000,
  slow: 2000,
  exit: true,
};
