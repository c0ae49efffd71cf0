// Lint: ESLint's and typescript-eslint's recommended rules (syntax only, so it stays fast); layout is Prettier's,
// except that no line may pass 140 characters (max-len), strings and template literals included, since Prettier
// (printWidth 120) does not split those.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

export default tseslint.config(
  { ignores: ['node_modules/', '.data/', '.tools/', '.test-data/', 'dist/', '**/dist/', '.venv/', '**/.venv/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
    },
  },
  {
    rules: { 'max-len': ['error', { code: 140, ignoreUrls: true, ignoreRegExpLiterals: true }] },
  },
  {
    // Written by scripts/sdk/generate.ts from the route table, not by hand.
    files: ['packages/sdk/src/generated/**'],
    rules: { 'max-len': 'off' },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: { globals: globals.node, sourceType: 'commonjs' },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // Tests read loosely typed JSON answers and use chai's property assertions (`.to.be.true`).
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off', '@typescript-eslint/no-unused-expressions': 'off' },
  },
);
