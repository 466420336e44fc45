import { execFile } from 'child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { promisify } from 'util';
import { builtFile, PROJECT_ROOT } from '../support/built';

const run = promisify(execFile);
const SDK_DIR = join(PROJECT_ROOT, 'packages', 'client-sdk');
const REPOSITORY = 'git+https://github.com/voice-tool-gateway/voice-tool-gateway.git';

interface PackedFile {
  path: string;
}

/** npm, bounded in time, without asking the registry about updates. */
async function npm(cwd: string, args: string[], timeoutMs = 60_000): Promise<string> {
  const { stdout } = await run('npm', args, {
    cwd,
    timeout: timeoutMs,
    maxBuffer: 16 * 1024 * 1024,
    env: { ...process.env, npm_config_update_notifier: 'false' },
  });
  return stdout;
}

/** What `npm pack` puts in a package's tarball (the build is already there: `npm test` builds first). */
async function packedFiles(directory: string): Promise<string[]> {
  const [report] = JSON.parse(await npm(directory, ['pack', '--dry-run', '--json', '--ignore-scripts']));
  return (report.files as PackedFile[]).map((file) => file.path).sort();
}

const manifest = (directory: string) => JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8'));

/** Both packages as npm would publish them: their files, their metadata, and the SDK in use. */
describe('the packages as npm packs them', () => {
  beforeAll(() => {
    builtFile('index.js');
    builtFile('../packages/client-sdk/dist/cjs/index.js');
  });

  it('the gateway: compiled code with types, data, the SDK build for the console, README and LICENSE; no sources or tests', async () => {
    const files = await packedFiles(PROJECT_ROOT);
    expect(files).toEqual(
      expect.arrayContaining([
        'LICENSE',
        'README.md',
        'package.json',
        'dist/index.js',
        'dist/index.d.ts',
        'dist/main.js',
        'dist/bootstrap.d.ts',
        'dist/console/public/index.html',
        'dist/litemcp/stdio/litemcp-stdio.cli.js',
        'data/characters.json',
        'packages/client-sdk/dist/esm/index.js',
        'packages/client-sdk/package.json',
      ]),
    );
    expect(files.filter((file) => /^(src|test|bench|clients|deploy|docs)\//.test(file) || /\.spec\.|\.e2e-spec\.|tsbuildinfo/.test(file))).toEqual([]);
    // of the SDK, only what the console serves and what tells Node and people what it is
    expect(files.filter((file) => file.startsWith('packages/') && !/^packages\/client-sdk\/(dist\/|package\.json$|README\.md$|LICENSE$)/.test(file))).toEqual(
      [],
    );
  });

  it('the SDK: ESM and CommonJS builds with their types, README and LICENSE; no sources or tests', async () => {
    const files = await packedFiles(SDK_DIR);
    expect(files).toEqual(
      expect.arrayContaining([
        'LICENSE',
        'README.md',
        'package.json',
        'dist/esm/index.js',
        'dist/esm/index.d.ts',
        'dist/esm/protocol/index.d.ts',
        'dist/cjs/index.js',
        'dist/cjs/index.d.ts',
        'dist/cjs/package.json',
        'dist/cjs/protocol/index.d.ts',
      ]),
    );
    expect(files.filter((file) => !/^(dist\/(esm|cjs)\/|LICENSE$|README\.md$|package\.json$)/.test(file))).toEqual([]);
  });

  it('both carry the MIT license, the same LICENSE text, and where the project lives', () => {
    const root = manifest(PROJECT_ROOT);
    const sdk = manifest(SDK_DIR);
    for (const pkg of [root, sdk]) {
      expect(pkg.license).toBe('MIT');
      expect(pkg.repository).toMatchObject({ type: 'git', url: REPOSITORY });
      expect(pkg.homepage).toMatch(/^https:\/\/github\.com\/voice-tool-gateway\/voice-tool-gateway/);
      expect(pkg.bugs).toEqual({ url: 'https://github.com/voice-tool-gateway/voice-tool-gateway/issues' });
    }
    expect(sdk.repository.directory).toBe('packages/client-sdk');
    const license = readFileSync(join(PROJECT_ROOT, 'LICENSE'), 'utf8');
    expect(license).toMatch(/^MIT License\n/);
    expect(readFileSync(join(SDK_DIR, 'LICENSE'), 'utf8')).toBe(license);
  });

  it('the gateway shares Nest with the app that embeds it (peers), and builds dist when installed from git or a path', () => {
    const root = manifest(PROJECT_ROOT);
    for (const name of [
      '@nestjs/common',
      '@nestjs/core',
      '@nestjs/config',
      '@nestjs/websockets',
      '@nestjs/platform-ws',
      '@nestjs/platform-express',
      'reflect-metadata',
      'rxjs',
    ]) {
      expect(root.peerDependencies[name]).toMatch(/^\^/);
      expect(root.dependencies[name]).toBeUndefined();
      expect(root.devDependencies[name]).toBeDefined();
    }
    expect(root.scripts.prepare).toBe('npm run build');
  });

  describe('the packed SDK, installed in a project of its own', () => {
    const workspace = mkdtempSync(join(tmpdir(), 'vtg-sdk-'));
    const project = join(workspace, 'device');

    beforeAll(async () => {
      const [packed] = JSON.parse(await npm(SDK_DIR, ['pack', '--ignore-scripts', '--json', '--pack-destination', workspace]));
      const ours = manifest(PROJECT_ROOT);
      mkdirSync(project);
      writeFileSync(
        join(project, 'package.json'),
        JSON.stringify({
          name: 'device',
          private: true,
          dependencies: { 'voice-tool-gateway-client': `file:${join(workspace, packed.filename)}`, ws: ours.dependencies.ws },
          devDependencies: { typescript: ours.devDependencies.typescript, '@types/node': ours.devDependencies['@types/node'] },
        }),
      );
      await npm(project, ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'], 90_000);
    }, 150_000);

    afterAll(() => rmSync(workspace, { recursive: true, force: true }));

    const node = async (args: string[]) => (await run(process.execPath, args, { cwd: project, timeout: 20_000 })).stdout.trim();

    it('loads with require() and with import(), the same API both ways', async () => {
      const names = 'Object.keys(sdk).filter((name) => name !== "default").sort().join(",")';
      const required = await node(['-e', `const sdk = require("voice-tool-gateway-client"); console.log(typeof sdk.LlmGatewayClient, ${names})`]);
      const imported = await node([
        '--input-type=module',
        '-e',
        `const sdk = await import("voice-tool-gateway-client"); console.log(typeof sdk.LlmGatewayClient, ${names})`,
      ]);
      expect(required).toMatch(/^function .*LlmGatewayClient/);
      expect(imported).toBe(required);
      expect(await node(['-e', 'console.log(typeof require("voice-tool-gateway-client/protocol"))'])).toBe('object');
    });

    it('has types for both, which TypeScript finds from a CommonJS and from an ES module file', async () => {
      const use = [
        "import { LlmGatewayClient, LlmGatewayError } from 'voice-tool-gateway-client';",
        "import type { LlmServerFrame } from 'voice-tool-gateway-client/protocol';",
        "const client = new LlmGatewayClient({ url: 'ws://127.0.0.1:9400' });",
        'const roundTrip: Promise<number> = client.ping();',
        'const frame: LlmServerFrame | undefined = undefined;',
        '// @ts-expect-error: the options are typed, so a wrong one is an error',
        'new LlmGatewayClient({ url: 1 });',
        'export { client, roundTrip, frame, LlmGatewayError };',
        '',
      ].join('\n');
      writeFileSync(join(project, 'use.cts'), use);
      writeFileSync(join(project, 'use.mts'), use);
      const tsc = join(project, 'node_modules', 'typescript', 'bin', 'tsc');
      await expect(
        run(
          process.execPath,
          [
            tsc,
            '--noEmit',
            '--strict',
            '--module',
            'nodenext',
            '--moduleResolution',
            'nodenext',
            '--target',
            'es2022',
            '--types',
            'node',
            'use.cts',
            'use.mts',
          ],
          {
            cwd: project,
            timeout: 60_000,
          },
        ),
      ).resolves.toBeDefined();
    }, 70_000);
  });
});
