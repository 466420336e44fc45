import { execFile } from 'child_process';
import { ToolRegistryService } from '../../src/core/tools/tool-registry.service';
import { PROJECT_ROOT } from '../support/built';
import { RunningGateway, startGateway } from '../support/gateway';

/** Each run starts a Node process or two; on a busy machine that takes seconds. */
jest.setTimeout(90_000);

const TOKEN = 'inspector-token';

interface CliRun {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs the MCP Inspector's CLI mode as README says, with the devDependency's binary (`--no-install`:
 * never a download). 0.15.0 is the newest Inspector whose `engines` allow Node 20; its CLI has
 * no option for headers, so the token goes in `?token=`.
 */
function inspector(...args: string[]): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    execFile('npx', ['--no-install', 'mcp-inspector', '--cli', ...args], { cwd: PROJECT_ROOT, timeout: 60_000 }, (error, stdout, stderr) => {
      if (error && typeof error.code !== 'number') return reject(error);
      resolve({ exitCode: error ? (error.code as number) : 0, stdout, stderr });
    });
  });
}

describe('the MCP Inspector CLI against Streamable HTTP at /mcp', () => {
  let gateway: RunningGateway;
  let endpoint: string;

  beforeAll(async () => {
    gateway = await startGateway({ AUTH_TOKENS: TOKEN });
    endpoint = gateway.http(`/mcp?token=${TOKEN}`);
  });
  afterAll(() => gateway.close());

  it('lists every shared tool (tools/list)', async () => {
    const run = await inspector(endpoint, '--transport', 'http', '--method', 'tools/list');
    expect(run.exitCode).toBe(0);
    const { tools } = JSON.parse(run.stdout) as { tools: { name: string; inputSchema: object }[] };
    expect(tools.map((tool) => tool.name).sort()).toEqual(
      gateway.app
        .get(ToolRegistryService)
        .list()
        .map((tool) => tool.name)
        .sort(),
    );
    expect(tools.find((tool) => tool.name === 'calculator')?.inputSchema).toMatchObject({ required: ['a', 'b'] });
  });

  it('calls a tool with the arguments it was given as key=value (tools/call)', async () => {
    const run = await inspector(
      endpoint,
      '--transport',
      'http',
      '--method',
      'tools/call',
      '--tool-name',
      'get_current_time',
      '--tool-arg',
      'timezone=Asia/Tokyo',
    );
    expect(run.exitCode).toBe(0);
    const result = JSON.parse(run.stdout) as { content: { type: string; text: string }[]; isError?: boolean };
    expect(result.isError).toBeFalsy();
    expect(JSON.parse(result.content[0].text)).toMatchObject({ timezone: 'Asia/Tokyo', utc_offset: '+09:00' });
  });

  it('shows a tool that fails as an error result', async () => {
    const run = await inspector(
      endpoint,
      '--transport',
      'http',
      '--method',
      'tools/call',
      '--tool-name',
      'calculator',
      '--tool-arg',
      'a=1',
      'b=0',
      'operation=divide',
    );
    expect(run.exitCode).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ content: [{ type: 'text', text: 'Division by zero' }], isError: true });
  });

  it('fails, saying why, with a wrong token', async () => {
    const run = await inspector(gateway.http('/mcp?token=nope'), '--transport', 'http', '--method', 'tools/list');
    expect(run.exitCode).not.toBe(0);
    expect(run.stderr).toMatch(/Invalid token/);
  });
});
