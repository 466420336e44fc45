/**
 * One suite, three projects: unit specs beside the code, the client SDK's specs
 * (packages/client-sdk/test, against a scripted server), and e2e specs in test/ that boot the
 * real app on port 0. `npm test` runs them all; `--selectProjects unit|sdk|e2e` runs one. Specs
 * are transpiled without type-checking (tsconfig.spec.json); `npm run typecheck` checks types.
 */
// @evan/opus's native binding works in the first module registry of a process that loads it
// only: Jest gives each suite its own registry, and a second suite in the same worker would get
// empty packets from a detached buffer. Specs use its WASM build, the same libopus, which loads
// cleanly in every registry. Workers inherit this, and so do suites run in Jest's own process.
process.env.OPUS_FORCE_WASM ??= '1';

const transform = {
  '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.spec.json' }],
  // aedes (the embedded MQTT server of xiaozhi devices) is an ES module, which Node 20 loads with
  // require() but Jest's CommonJS registry does not: its files are transpiled to CommonJS for specs.
  '/node_modules/aedes/.+\\.js$': [
    'ts-jest',
    { tsconfig: { allowJs: true, module: 'commonjs', target: 'ES2022', esModuleInterop: true, resolveJsonModule: true, isolatedModules: true } },
  ],
};
const common = {
  moduleFileExtensions: ['js', 'json', 'ts'],
  testEnvironment: 'node',
  transform,
  transformIgnorePatterns: ['/node_modules/(?!aedes/)'],
  moduleNameMapper: {
    // The SDK's src/protocol is its build's copy of the server's wire contract: tests read the source itself, never a stale copy.
    '^(?:\\.\\./src/|\\./)protocol/(.*?)(?:\\.js)?$': `${__dirname}/src/llm-gateway/protocol/$1`,
    // The SDK is ESM and imports its modules as './x.js'; under ts-jest they are the .ts files.
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
};

module.exports = {
  testTimeout: 30000,
  // Suites run in a worker process, replaced once its heap passes this after a suite. Every suite
  // loads its own copy of the modules, and whatever lives as long as the process (prom-client's
  // collectors of process metrics, for one) keeps its suite's copy: in one process for the whole
  // run the heap passed 2 GB, and garbage collection slowed the last suites several times over.
  // (Without a limit, Jest runs the suites in its own process when it has one worker, 2 cores.)
  workerIdleMemoryLimit: '1GB',
  // One socket a test leaves open (seen once: a server-side socket in CLOSE-WAIT after the whole
  // run) would keep CI waiting for ever. Ending the run is not ignoring it:
  // `npx jest --detectOpenHandles <files>` finds it.
  forceExit: true,
  projects: [
    { ...common, displayName: 'unit', rootDir: 'src', testRegex: '.*\\.spec\\.ts$' },
    {
      ...common,
      displayName: 'sdk',
      rootDir: 'packages/client-sdk',
      roots: ['<rootDir>/test'],
      testRegex: '.*\\.spec\\.ts$',
    },
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
