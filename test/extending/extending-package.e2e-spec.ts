import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ChildProcess, execFile, spawn } from 'child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { promisify } from 'util';
import { builtFile, PROJECT_ROOT } from '../support/built';
import { LiteMcpClient } from '../support/litemcp-client';
import { listeningPort } from '../support/main-process';
import { freePort } from '../support/ports';

const run = promisify(execFile);

/** The token the guide's example configures. */
const TOKEN = 'my-secret';
const TOOL = 'device.light.set';

/**
 * The code blocks of "Adding your own tools" in docs/guides/extending.md, by language, exactly as
 * written there (README's tool example is the same `main.ts`: test/project/docs-links.e2e-spec.ts checks it).
 */
function guideExample(): { tsconfig: string; main: string; install: string } {
  const guide = readFileSync(join(PROJECT_ROOT, 'docs', 'guides', 'extending.md'), 'utf8');
  const start = guide.indexOf('## Adding your own tools');
  if (start === -1) throw new Error('docs/guides/extending.md should have a section "## Adding your own tools"');
  const end = guide.indexOf('\n## ', start + 1);
  const section = guide.slice(start, end === -1 ? undefined : end);
  const blocks = [...section.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map(([, language, code]) => ({ language, code }));
  const only = (language: string) => {
    const found = blocks.filter((block) => block.language === language);
    if (found.length !== 1) throw new Error(`The guide's "Adding your own tools" should have one ${language} block, not ${found.length}`);
    return found[0].code;
  };
  return { tsconfig: only('json'), main: only('ts'), install: only('bash') };
}

/** npm as a user runs it, in `cwd`, bounded in time. */
async function npm(cwd: string, args: string[], timeoutMs: number): Promise<string> {
  const { stdout } = await run('npm', args, {
    cwd,
    timeout: timeoutMs,
    maxBuffer: 16 * 1024 * 1024,
    env: { ...process.env, npm_config_update_notifier: 'false' },
  });
  return stdout;
}

/**
 * The guide's extension example, copied from docs/guides/extending.md at test time (so the two cannot drift),
 * built as a package of its own that installs this one from the tarball `npm pack` makes, the
 * way a user outside this repository would. Its tool must show on every protocol.
 */
describe('the extension example (docs/guides/extending.md, README), as a separate package', () => {
  const workspace = mkdtempSync(join(tmpdir(), 'vtg-extending-'));
  const app = join(workspace, 'light-gateway');
  let child: ChildProcess | undefined;
  let output = '';
  let base = '';

  beforeAll(async () => {
    builtFile('index.js'); // `npm test` builds first; packing skips the build again (--ignore-scripts)
    const [packed] = JSON.parse(await npm(PROJECT_ROOT, ['pack', '--ignore-scripts', '--json', '--pack-destination', workspace], 60_000));
    const tarball = join(workspace, packed.filename);

    const example = guideExample();
    expect(example.install).toMatch(/npm install \S+voice-tool-gateway-0\.1\.0\.tgz @nestjs\/common@11 reflect-metadata/);
    mkdirSync(join(app, 'src'), { recursive: true });
    const ours = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8'));
    // What the guide's `npm install` lines write, with the tools at the versions this repository
    // already has, so npm finds everything in its cache.
    writeFileSync(
      join(app, 'package.json'),
      JSON.stringify({
        name: 'light-gateway',
        version: '1.0.0',
        private: true,
        dependencies: { 'voice-tool-gateway': `file:${tarball}`, '@nestjs/common': '^11.0.0', 'reflect-metadata': '^0.2.2' },
        devDependencies: { typescript: ours.devDependencies.typescript, '@types/node': ours.devDependencies['@types/node'] },
      }),
    );
    writeFileSync(join(app, 'tsconfig.json'), example.tsconfig);
    writeFileSync(join(app, 'src', 'main.ts'), example.main);
    await npm(app, ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'], 90_000);
    await run(process.execPath, [join(app, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', app], { cwd: app, timeout: 60_000 });

    // A fixed port, not 0: the example's listen() must find it in CLOUD_PORT by itself.
    const port = await freePort();
    child = spawn(process.execPath, [join(app, 'dist', 'main.js')], {
      cwd: app,
      env: { ...process.env, CLOUD_HOST: '127.0.0.1', CLOUD_PORT: String(port), MCP_WS_PORT: '0', CLOUD_LOG_LEVEL: 'INFO', AUTH_TOKENS: '' },
    });
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    expect(await listeningPort(() => output, 20_000)).toBe(port);
    base = `127.0.0.1:${port}`;
  }, 170_000);

  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child!.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(workspace, { recursive: true, force: true });
  }, 20_000);

  const authorized = { Authorization: `Bearer ${TOKEN}` };

  it('shares one copy of Nest with the gateway, and listens on CLOUD_HOST:CLOUD_PORT by itself', () => {
    expect(existsSync(join(app, 'node_modules', '@nestjs', 'core'))).toBe(true);
    expect(existsSync(join(app, 'node_modules', 'voice-tool-gateway', 'node_modules', '@nestjs'))).toBe(false);
    expect(output).toContain(`Listening on ${base}`);
    expect(output).toContain(`Web console: http://${base}/`);
    // the settings given to forRoot() win over the environment's empty AUTH_TOKENS
    expect(output).toMatch(/Auth: on \(1 token in AUTH_TOKENS\)/);
  });

  it('lists the tool in the catalogue, GET /tools', async () => {
    expect((await fetch(`http://${base}/tools`)).status).toBe(401);
    const { tools } = (await (await fetch(`http://${base}/tools`, { headers: authorized })).json()) as { tools: unknown[] };
    expect(tools).toContainEqual(expect.objectContaining({ name: TOOL, source: 'module', description: 'Turns a light on or off' }));
  });

  it('serves it over MCP (tools/list and tools/call, with the official SDK over Streamable HTTP)', async () => {
    const client = new Client({ name: 'extending-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`http://${base}/mcp`), { requestInit: { headers: authorized } }));
    try {
      const { tools } = await client.listTools();
      expect(tools.find((tool) => tool.name === TOOL)?.inputSchema).toMatchObject({ required: ['room', 'on'] });
      const garage = await client.callTool({ name: TOOL, arguments: { room: 'garage', on: true } });
      expect(garage).toMatchObject({ isError: true, content: [{ type: 'text', text: 'The garage has no smart light' }] });
    } finally {
      await client.close();
    }
  });

  it('serves it over LiteMCP', async () => {
    const client = await LiteMcpClient.connect(`ws://${base}/litemcp/${TOOL}`, TOKEN);
    try {
      expect((await client.info()).parameters.map((parameter: { name: string }) => parameter.name)).toEqual(['room', 'on']);
      const result = await client.call(TOOL, ['kitchen', 'true']);
      expect(JSON.parse(result.response.content[0].data)).toEqual({ room: 'kitchen', on: true });
    } finally {
      client.close();
    }
  });

  it("lists it in UTCP's manual", async () => {
    const manual = (await (await fetch(`http://${base}/utcp`, { headers: authorized })).json()) as { tools: { name: string }[] };
    expect(manual.tools.map((tool: { name: string }) => tool.name)).toContain(TOOL);
  });
});
