import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { WebSocketClientTransport } from '@modelcontextprotocol/sdk/client/websocket.js';
import type { LoggerService } from '@nestjs/common';
import { createHash } from 'crypto';
import { AUDIT_LOG_CONTEXT } from '../../src/core/audit/audit.service';
import { HttpUpstream } from '../support/http-upstream';
import { LlmStack, startLlmStack } from '../support/llm-stack';
import { toolResults } from '../support/scripted-llm';
import { provideGlobalWebSocket } from '../support/sdk-websocket';
import { SPEC_BATTERY_TOOL } from '../support/spec-clients';
import { TestSocket } from '../support/test-socket';
import { serversFile, upstreamIn } from '../support/upstreams';

provideGlobalWebSocket();

const TOKEN = 'audit-secret-token';
const UPSTREAM_TOKEN = 'audit-upstream-token';
/** How audit lines name the token: never the token, a short digest of it. */
const TOKEN_LABEL = `token#${createHash('sha256').update(TOKEN).digest('hex').slice(0, 8)}`;

/** The gateway's logger, replaced: every line it writes, with its context. */
class CapturedLog implements LoggerService {
  readonly lines: { message: unknown; context?: string }[] = [];
  log = (message: unknown, context?: string) => this.lines.push({ message, context });
  error = (message: unknown, context?: string) => this.lines.push({ message, context });
  warn = (message: unknown, context?: string) => this.lines.push({ message, context });

  audit(): any[] {
    return this.lines.filter((line) => line.context === AUDIT_LOG_CONTEXT).map((line) => line.message);
  }
}

const auth = { Authorization: `Bearer ${TOKEN}` };

describe('the audit log, on every protocol', () => {
  let stack: LlmStack;
  let home: HttpUpstream;
  let file: { path: string; remove(): void };
  let log: CapturedLog;

  async function start(settings: Record<string, string> = {}): Promise<void> {
    // INFO lets audit lines through; the boot's own INFO lines, written before the logger is replaced, are kept off the test output.
    const write = jest.spyOn(process.stdout, 'write').mockImplementation(() => true);
    stack = await startLlmStack({
      CLOUD_LOG_LEVEL: 'INFO',
      AUTH_TOKENS: TOKEN,
      MCP_WS_MAX_CONNECTIONS: 10,
      MCP_SERVERS_FILE: file.path,
      ...settings,
    });
    log = new CapturedLog();
    stack.gateway.app.useLogger(log);
    write.mockRestore();
    await upstreamIn(stack.gateway, 'home', 'connected');
  }

  beforeAll(async () => {
    home = await HttpUpstream.start(UPSTREAM_TOKEN, [
      {
        tool: { name: 'set-light', description: 'Turns a light on or off', inputSchema: { type: 'object', properties: { room: { type: 'string' } } } },
        run: ({ room }) => ({ content: [{ type: 'text', text: `The ${room} light is on` }] }),
      },
    ]);
    file = serversFile({ home: { url: home.url(), headers: { Authorization: `Bearer ${UPSTREAM_TOKEN}` } } });
  });

  afterAll(async () => {
    await home?.kill();
    file?.remove();
  });

  describe('without AUDIT_LOG_ARGUMENTS', () => {
    beforeAll(() => start());
    afterAll(() => stack?.close());

    it('writes one line per tool call of a turn (server, upstream, device and malformed calls) and one for the turn', async () => {
      const client = await stack.connect('/', auth);
      client.send({ type: 'register_tools', tools: [SPEC_BATTERY_TOOL] });
      await client.until('tools_registered');
      stack.llm.reply(
        {
          toolCalls: [
            { id: 'c1', name: 'calculator', arguments: { a: 2, b: 3, operation: 'multiply' } },
            { id: 'c2', name: 'home.set_light', arguments: { room: 'kitchen' } },
            { id: 'c3', name: 'get_battery', arguments: {} },
            { id: 'c4', name: 'calculator', arguments: '{"a": 1,' },
            { id: 'c5', name: 'no_such_tool', arguments: {} },
          ],
        },
        (request) => ({ text: `Battery at ${toolResults(request).c3.level}.` }),
      );
      client.send({ type: 'text_input', text: 'my private question', turn_id: 'turn-audited' });
      const { call_id } = (await client.until('tool_callback')).pop();
      client.send({ type: 'tool_result', call_id, result: { level: 85 }, success: true, error: null });
      await client.until('status', 'idle');
      await client.close();

      const lines = log.audit();
      const calls = lines.filter((line) => line.event === 'tool_call');
      expect(calls.map((line) => [line.tool, line.source, line.outcome]).sort()).toEqual([
        // Arguments that are not JSON never reach the catalogue: the line has no source.
        ['calculator', undefined, 'INVALID_TOOL_PARAMETERS'],
        ['calculator', 'module', 'ok'],
        ['get_battery', expect.stringMatching(/^client:/), 'ok'],
        ['home.set_light', 'mcp:home', 'ok'],
        ['no_such_tool', undefined, 'TOOL_NOT_FOUND'],
      ]);
      for (const line of calls) {
        expect(line).toMatchObject({
          token: TOKEN_LABEL,
          protocol: 'llm',
          turn_id: 'turn-audited',
          session_id: client.sessionId,
          duration_ms: expect.any(Number),
        });
      }
      expect(lines.filter((line) => line.event === 'turn')).toEqual([
        {
          event: 'turn',
          token: TOKEN_LABEL,
          protocol: 'llm',
          turn_id: 'turn-audited',
          session_id: client.sessionId,
          outcome: 'ok',
          duration_ms: expect.any(Number),
          tool_calls: 5,
        },
      ]);
      const written = JSON.stringify(log.lines);
      for (const secret of [TOKEN, 'my private question', 'kitchen', 'Battery at']) expect(written).not.toContain(secret);
    });

    it('writes a failed turn with its error code, and a cancelled one as cancelled', async () => {
      const client = await stack.connect('/', auth);
      stack.llm.reply({ fault: 'http500' }, { text: 'A long answer', delayMs: 2000 });
      client.send({ type: 'text_input', text: 'hi', turn_id: 'turn-failed' });
      await client.until('status', 'idle');
      client.send({ type: 'text_input', text: 'hi again', turn_id: 'turn-cancelled' });
      await client.until('status', 'processing');
      client.send({ type: 'cancel', turn_id: 'turn-cancelled' });
      await client.until('status', 'idle');
      await client.close();
      const turns = log.audit().filter((line) => line.event === 'turn' && line.turn_id !== 'turn-audited');
      expect(turns.map((line) => [line.turn_id, line.outcome, line.tool_calls])).toEqual([
        ['turn-failed', 'LLM_ERROR', 0],
        ['turn-cancelled', 'cancelled', 0],
      ]);
    });

    it('writes the calls of MCP (WebSocket and Streamable HTTP), LiteMCP and UTCP (WebSocket and HTTP) with their protocol', async () => {
      const before = log.audit().length;
      const overWs = new Client({ name: 'audit-e2e', version: '1.0.0' });
      await overWs.connect(new WebSocketClientTransport(new URL(stack.gateway.ws(`/mcp?token=${TOKEN}`))));
      await overWs.callTool({ name: 'calculator', arguments: { a: 1, b: 2 } });
      await overWs.callTool({ name: 'calculator', arguments: { a: 'one', b: 2 } });
      await overWs.close();
      const overHttp = new Client({ name: 'audit-e2e', version: '1.0.0' });
      await overHttp.connect(new StreamableHTTPClientTransport(new URL(stack.gateway.http('/mcp')), { requestInit: { headers: auth } }));
      await overHttp.callTool({ name: 'home.set_light', arguments: { room: 'hall' } });
      await overHttp.close();

      const lite = await fetch(stack.gateway.http('/litemcp/calculator'), {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...auth },
        body: JSON.stringify({ tool: 'calculator', arguments: ['1', '0', 'divide'] }),
      });
      expect(lite.status).toBe(200);

      const utcp = await TestSocket.open(stack.gateway.ws(`/utcp?token=${TOKEN}`));
      utcp.send({ type: 'call', id: 'u1', tool: 'get_current_time', params: {} });
      expect(await utcp.next()).toMatchObject({ id: 'u1' });
      await utcp.close();
      const utcpHttp = await fetch(stack.gateway.http('/utcp/calculator'), {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...auth },
        body: JSON.stringify({ a: 1, b: 2 }),
      });
      expect(await utcpHttp.json()).toBe(3);

      const lines = log.audit().slice(before);
      expect(lines.map((line) => [line.protocol, line.tool, line.source, line.outcome, line.token])).toEqual([
        ['mcp', 'calculator', 'module', 'ok', TOKEN_LABEL],
        ['mcp', 'calculator', 'module', 'INVALID_TOOL_PARAMETERS', TOKEN_LABEL],
        ['mcp', 'home.set_light', 'mcp:home', 'ok', TOKEN_LABEL],
        ['litemcp', 'calculator', 'module', 'TOOL_EXECUTION_FAILED', TOKEN_LABEL],
        ['utcp', 'get_current_time', 'builtin', 'ok', TOKEN_LABEL],
        ['utcp', 'calculator', 'module', 'ok', TOKEN_LABEL],
      ]);
      for (const line of lines) expect(line).not.toHaveProperty('arguments');
    });
  });

  describe('with AUDIT_LOG_ARGUMENTS=true', () => {
    beforeAll(() => start({ AUDIT_LOG_ARGUMENTS: 'true' }));
    afterAll(() => stack?.close());

    it('carries the arguments and results of calls, the words and answer of turns, clipped', async () => {
      const client = await stack.connect('/', auth);
      stack.llm.reply({ toolCalls: [{ id: 'c1', name: 'calculator', arguments: { a: 6, b: 7, operation: 'multiply' } }] }, { text: 'Forty-two.' });
      client.send({ type: 'text_input', text: `six times seven ${'please '.repeat(300)}`, turn_id: 'turn-args' });
      await client.until('status', 'idle');
      await client.close();
      const [call, turn] = log.audit();
      expect(call).toMatchObject({ event: 'tool_call', tool: 'calculator', arguments: '{"a":6,"b":7,"operation":"multiply"}', result: '42' });
      expect(turn).toMatchObject({
        event: 'turn',
        turn_id: 'turn-args',
        answer: 'Forty-two.',
        input: expect.stringMatching(/^six times seven please .*… \[\d+ chars\]$/),
      });
      expect(turn.input.length).toBeLessThan(1100);
      expect(JSON.stringify(log.lines)).not.toContain(TOKEN);
    });
  });
});
