// @ts-check
import eslint from '@eslint/js';
import prettier from 'eslint-config-prettier';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'dist/',
      'node_modules/',
      'coverage/',
      'test-artifacts/',
      'packages/*/dist/',
      'packages/client-sdk/src/protocol/',
      'dist-bench/',
      'clients/c/build*/',
    ],
  },
  eslint.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: { ...globals.node, ...globals.jest },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
    },
  },
  {
    // Tests and benchmarks read arbitrary frames off the wire; typing each one would only restate the assertions.
    files: ['test/**/*.ts', 'bench/**/*.ts', 'src/**/*.spec.ts', 'packages/*/test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // The web console runs in the browser as native ES modules.
    files: ['src/console/public/**/*.js'],
    languageOptions: { globals: { ...globals.browser }, sourceType: 'module' },
  },
  // Layout is Prettier's (`npm run format`; `npm run lint` checks it): no rule here argues with it.
  prettier,
);
