import { Logger } from '@nestjs/common';
import { ToolRegistryService } from '../../src/core/tools/tool-registry.service';
import { LlmStack, startLlmStack } from '../support/llm-stack';
import { toolResults } from '../support/scripted-llm';
import { startGateway } from '../support/gateway';
import { TestSocket } from '../support/test-socket';

/** The longest a ping over another socket waited while `during` ran. */
async function worstPingMs(url: string, during: Promise<unknown>): Promise<number> {
  const socket = await TestSocket.open(url);
  await socket.next();
  let worst = 0;
  let done = false;
  void during.finally(() => (done = true));
  while (!done) {
    const started = performance.now();
    socket.send({ type: 'ping' });
    await socket.next();
    worst = Math.max(worst, performance.now() - started);
  }
  await socket.close();
  return worst;
}

describe('hardening', () => {
  let stack: LlmStack;

  beforeAll(async () => {
    stack = await startLlmStack({ MCP_WS_AUTH_TOKEN: 'mcp-token' });
  });
  afterAll(() => stack.close());
  beforeEach(() => stack.llm.reset());

  describe('a catastrophic pattern in a tool schema', () => {
    const EVIL = { type: 'object', properties: { code: { type: 'string', pattern: '^(a+)+$' } }, required: ['code'] };

    it('costs other clients nothing when the model calls a device tool with it', async () => {
      const device = await stack.connect();
      device.send({ type: 'register_tools', tools: [{ name: 'unlock', description: 'Unlocks', parameters: EVIL }] });
      expect((await device.until('tools_registered')).pop().tools).toEqual([{ name: 'unlock', status: 'registered' }]);
      stack.llm.reply({ toolCalls: [{ name: 'unlock', arguments: { code: `${'a'.repeat(40)}!` } }] }, (request) => ({
        text: JSON.stringify(toolResults(request)),
      }));
      device.send({ type: 'text_input', text: 'open up' });
      const turn = device.until('llm_response');
      // On the native engine 40 characters backtrack for hours; a ping here would never come back.
      expect(await worstPingMs(stack.gateway.ws('/'), turn)).toBeLessThan(50);
      expect((await turn).pop().content).toMatch(/must match pattern/);
      await device.close();
    });

    it('costs other clients nothing when any protocol calls a catalogue tool with it', async () => {
      const registry = stack.gateway.app.get(ToolRegistryService);
      registry.register({ name: 'vault.open', description: 'Opens', inputSchema: EVIL, handler: () => 'open', source: 'mcp:vault' });
      try {
        const utcp = await TestSocket.open(stack.gateway.ws('/utcp'));
        utcp.send({ type: 'call', id: 1, tool: 'vault.open', params: { code: `${'a'.repeat(40)}!` } });
        expect(await worstPingMs(stack.gateway.ws('/'), utcp.next())).toBeLessThan(50);
        await utcp.close();
      } finally {
        registry.unregister('vault.open');
      }
    });

    it('refuses, at registration and with the reason, a pattern only a backtracking engine runs', async () => {
      const device = await stack.connect();
      const schema = { type: 'object', properties: { code: { type: 'string', pattern: '^(a)\\1$' } } };
      device.send({ type: 'register_tools', tools: [{ name: 'twice', description: 'Twice', parameters: schema }] });
      const answer = (await device.until('tools_registered')).pop();
      expect(answer.tools).toEqual([
        {
          name: 'twice',
          status: 'failed',
          code: 'INVALID_TOOL_PARAMETERS',
          error: expect.stringMatching(/pattern "\^\(a\)\\\\1\$" is not supported.*backreferences/),
        },
      ]);
      await device.close();
    });
  });

  describe('MCP initialize with bad params', () => {
    const BAD_INITIALIZE = { jsonrpc: '2.0', id: 9, method: 'initialize', params: { protocolVersion: 5, capabilities: {} } };

    it('is answered -32602 over WebSocket, in one readable line', async () => {
      const socket = await TestSocket.open(stack.gateway.ws('/mcp'), { headers: { Authorization: 'Bearer mcp-token' }, protocols: ['mcp'] });
      socket.send(BAD_INITIALIZE);
      const answer = await socket.next();
      expect(answer).toEqual({
        jsonrpc: '2.0',
        id: 9,
        error: { code: -32602, message: expect.stringMatching(/Invalid initialize params: protocolVersion: .*; clientInfo: /) },
      });
      expect(answer.error.message).not.toContain('\n');
      // The session goes on: a right initialize is served.
      socket.send({ ...BAD_INITIALIZE, id: 10, params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } });
      expect((await socket.next()).result).toMatchObject({ protocolVersion: '2025-06-18' });
      await socket.close();
    });

    it('is answered 400 with -32602 over Streamable HTTP, and leaves no session', async () => {
      const response = await fetch(stack.gateway.http('/mcp'), {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Authorization: 'Bearer mcp-token' },
        body: JSON.stringify(BAD_INITIALIZE),
      });
      expect(response.status).toBe(400);
      expect(response.headers.get('mcp-session-id')).toBeNull();
      expect(await response.json()).toEqual({
        jsonrpc: '2.0',
        id: 9,
        error: { code: -32602, message: expect.stringMatching(/^Invalid initialize params: protocolVersion/) },
      });
    });
  });

  it('serves a message sent right behind auth on the MCP envelope, in the same tick, every time', async () => {
    for (let attempt = 0; attempt < 20; attempt += 1) {
      const socket = await TestSocket.open(stack.gateway.ws('/mcp'));
      socket.send({ type: 'auth', token: 'mcp-token' });
      socket.send({ type: 'message', payload: { jsonrpc: '2.0', id: 1, method: 'ping' } });
      expect(await socket.next()).toMatchObject({ type: 'auth', status: 'authenticated' });
      expect(await socket.next()).toMatchObject({ type: 'message', payload: { jsonrpc: '2.0', id: 1, result: {} } });
      await socket.close();
    }
  });

  it('answers a 500 KB text_input without stalling, and keeps those words out of the log but for a bounded part', async () => {
    const chatty = await startLlmStack({ CLOUD_LOG_LEVEL: 'DEBUG', AUDIT_LOG_ARGUMENTS: 'true', MCP_WS_AUTH_TOKEN: 't' });
    const lines: string[] = [];
    const capture = (chunk: unknown) => (lines.push(String(chunk)), true);
    const writes = [jest.spyOn(process.stdout, 'write').mockImplementation(capture), jest.spyOn(process.stderr, 'write').mockImplementation(capture)];
    const big = 'x'.repeat(500_000);
    try {
      const device = await chatty.connect();
      device.send({ type: 'text_input', text: big });
      expect((await device.until('llm_response')).pop().content).toHaveLength('You said: '.length + big.length);
      const mcp = await TestSocket.open(chatty.gateway.ws('/mcp'), { protocols: ['mcp'], headers: { Authorization: 'Bearer t' } });
      mcp.send({ jsonrpc: '2.0', id: 1, method: big });
      mcp.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: big, arguments: {} } });
      await Promise.all([mcp.next(5000), mcp.next(5000)]);
      const utcp = await TestSocket.open(chatty.gateway.ws('/utcp'));
      utcp.send({ type: 'call', id: 1, tool: 'calculator', params: { a: big, b: 1 } });
      await utcp.next(5000);
      await Promise.all([device.close(), mcp.close(), utcp.close()]);
    } finally {
      writes.forEach((write) => write.mockRestore());
      await chatty.close();
    }
    expect(lines.some((line) => line.includes('"event":"turn"'))).toBe(true);
    expect(Math.max(...lines.map((line) => line.length))).toBeLessThan(5_000);
  });

  it('never shows the password of LLM_BASE_URL to a client, and logs the unreachable model in one line', async () => {
    const gateway = await startGateway({ LLM_BASE_URL: 'http://voice:hunter22@127.0.0.1:9/v1/', LLM_MAX_RETRIES: 0, LLM_TIMEOUT: 3 });
    const warnings = jest.spyOn(Logger.prototype, 'warn');
    try {
      const socket = await TestSocket.open(gateway.ws('/'));
      await socket.next();
      socket.send({ type: 'text_input', text: 'hello' });
      let frame: any;
      do frame = await socket.next(5000);
      while (frame.type !== 'error');
      expect(frame).toMatchObject({ code: 'LLM_ERROR', details: 'The model server at http://***:***@127.0.0.1:9/v1/ could not be reached' });
      const logged = warnings.mock.calls.map(([message]) => String(message)).filter((message) => message.startsWith('LLM request failed'));
      expect(logged).toEqual([expect.stringMatching(/^LLM request failed: Connection error\. \(.*ECONNREFUSED.*\)$/)]);
      await socket.close();
    } finally {
      warnings.mockRestore();
      await gateway.close();
    }
  });
});
