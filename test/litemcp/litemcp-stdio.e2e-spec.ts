import { ChildProcessWithoutNullStreams, spawn } from 'child_process';
import { builtFile, PROJECT_ROOT } from '../support/built';

const V = [1, 0, 0];
const END = '\n\n\n';

/** The stdio command, spawned as a device would: requests on stdin, answers read off stdout. */
class StdioTool {
  readonly process: ChildProcessWithoutNullStreams;
  private stdout = '';
  stderr = '';
  private readonly waiters: (() => void)[] = [];
  readonly exited: Promise<number | null>;

  constructor(args: string[], env: Record<string, string> = {}) {
    this.process = spawn(process.execPath, [builtFile('litemcp/stdio/litemcp-stdio.cli.js'), ...args], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, CLOUD_LOG_LEVEL: 'INFO', ...env },
    });
    this.process.stdout.on('data', (chunk: Buffer) => {
      this.stdout += chunk.toString();
      this.waiters.splice(0).forEach((wake) => wake());
    });
    this.process.stderr.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
    this.exited = new Promise((resolve) => this.process.once('exit', (code) => resolve(code)));
  }

  write(text: string): void {
    this.process.stdin.write(text);
  }

  request(frame: unknown): void {
    this.write(JSON.stringify(frame, null, 2) + END);
  }

  /** The next answer: everything up to the next three newlines, parsed. */
  async next(timeoutMs = 10000): Promise<any> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const end = this.stdout.indexOf(END);
      if (end >= 0) {
        const text = this.stdout.slice(0, end);
        this.stdout = this.stdout.slice(end + END.length);
        return JSON.parse(text);
      }
      if (Date.now() > deadline) throw new Error(`No answer; stdout so far: ${JSON.stringify(this.stdout)}`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 100);
      });
    }
  }

  rest(): string {
    return this.stdout;
  }
}

describe('LiteMCP over stdio', () => {
  it('serves the calculator: get, call, bad input, repeated ids, and a clean exit at EOF', async () => {
    const tool = new StdioTool(['--tool', 'calculator'], { CLOUD_MAX_MESSAGE_SIZE: '2048' });

    tool.request({ version: V, id: 1, type: 'get', data: null });
    expect(await tool.next()).toMatchObject({ version: V, id: 1, type: 'info', data: { name: 'calculator' } });

    tool.request({ version: V, id: 2, type: 'call', data: { version: V, tool: 'calculator', arguments: ['2', '3'] } });
    expect(await tool.next()).toEqual({
      version: V,
      id: 2,
      type: 'result',
      data: { version: V, params: { a: '2', b: '3' }, response: { content: [{ type: 'number', data: '5' }], error: false } },
    });

    tool.write('not json at all' + END);
    expect(await tool.next()).toMatchObject({ id: null, type: 'error', data: { code: 'INVALID_MESSAGE' } });

    tool.request({ version: V, id: 3, type: 'explode' });
    expect(await tool.next()).toMatchObject({ id: 3, type: 'error', data: { code: 'UNKNOWN_MESSAGE_TYPE' } });

    tool.request({ version: [9, 0, 0], id: 4, type: 'get' });
    expect(await tool.next()).toMatchObject({ id: 4, type: 'error', data: { code: 'UNSUPPORTED_VERSION' } });

    tool.request({ version: V, id: 5, type: 'call', data: { tool: 'calculator', arguments: ['1'] } });
    expect(await tool.next()).toMatchObject({ id: 5, type: 'result', data: { response: { error: true } } });

    tool.request({ version: V, id: 6, type: 'call', data: { tool: 'calculator', arguments: ['1', 'b', 'c', 'd'] } });
    expect((await tool.next()).data.response.content[0].data).toMatch(/takes at most 3 argument/);

    tool.write('{"version":[1,0,0],"id":7,"type":"get","pad":"' + 'x'.repeat(3000) + '"}' + END);
    expect(await tool.next()).toMatchObject({ id: null, type: 'error', data: { code: 'PAYLOAD_TOO_LARGE' } });

    tool.request({ version: V, id: 2, type: 'get' });
    tool.request({ version: V, id: 8, type: 'call', data: { tool: 'calculator', arguments: ['6', '7', 'multiply'] } });
    expect(await tool.next()).toMatchObject({ id: 8, data: { response: { content: [{ data: '42' }] } } });

    tool.process.stdin.end();
    expect(await tool.exited).toBe(0);
    expect(tool.rest()).toBe('');
    expect(tool.stderr).toMatch(/"level":"log"/);
  }, 30000);

  it('serves get_current_time and a last request that EOF ends', async () => {
    const tool = new StdioTool(['--tool=get_current_time']);
    tool.write(JSON.stringify({ version: V, id: 1, type: 'call', data: { tool: 'get_current_time', arguments: ['UTC'] } }));
    tool.process.stdin.end();
    const answer = await tool.next();
    expect(JSON.parse(answer.data.response.content[0].data)).toMatchObject({ timezone: 'UTC', utc_offset: '+00:00' });
    expect(await tool.exited).toBe(0);
  }, 30000);

  it('refuses an unknown tool and a missing --tool with exit code 2, writing nothing to stdout', async () => {
    const unknown = new StdioTool(['--tool', 'nope']);
    expect(await unknown.exited).toBe(2);
    expect(unknown.stderr).toMatch(/Unknown tool "nope". Available: .*calculator/);
    expect(unknown.rest()).toBe('');
    const missing = new StdioTool([]);
    expect(await missing.exited).toBe(2);
    expect(missing.stderr).toMatch(/Missing --tool/);
  }, 30000);

  it('fails with exit code 1 and names the bad variable on invalid configuration', async () => {
    const tool = new StdioTool(['--tool', 'calculator'], { SERVER_TOOL_TIMEOUT: 'soon' });
    expect(await tool.exited).toBe(1);
    expect(tool.stderr).toMatch(/SERVER_TOOL_TIMEOUT/);
    expect(tool.rest()).toBe('');
  }, 30000);
});
