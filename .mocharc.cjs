module.exports = {
  'node-option': ['import=tsx'],
  require: ['test/helpers/hooks.ts'],
  spec: ['test/**/*.test.ts'],
  timeout: 30000,
  slow: 2000,
  exit: true,
};
