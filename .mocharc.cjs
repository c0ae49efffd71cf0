module.exports = {
  'node-option': ['import=tsx'],
  require: ['test/helpers/hooks.ts'],
  spec: ['test/**/*.test.ts'],
  reporter: './test/helpers/reporter.cjs',
  timeout: 30000,
  slow: 2000,
  exit: true,
};
