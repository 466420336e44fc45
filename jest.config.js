/**
 * One suite, two projects: unit specs beside the code, e2e specs in test/ that boot the real
 * app on port 0. `npm test` runs both; `--selectProjects unit|e2e` runs one. Specs are
 * transpiled without type-checking (tsconfig.spec.json); `npm run typecheck` checks types.
 */
const transform = {
  '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.spec.json' }],
};
const common = {
  moduleFileExtensions: ['js', 'json', 'ts'],
  testEnvironment: 'node',
  transform,
};

module.exports = {
  testTimeout: 30000,
  projects: [
    { ...common, displayName: 'unit', rootDir: 'src', testRegex: '.*\\.spec\\.ts$' },
    {
      ...common,
      displayName: 'e2e',
      rootDir: '.',
      roots: ['<rootDir>/test'],
      testRegex: '.*\\.e2e-spec\\.ts$',
      globalSetup: '<rootDir>/test/support/redis-global-setup.ts',
      globalTeardown: '<rootDir>/test/support/redis-global-teardown.ts',
    },
  ],
};
