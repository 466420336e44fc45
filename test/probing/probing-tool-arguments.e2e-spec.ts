import { ToolRegistryService } from '../../src/core/tools/tool-registry.service';
import { LlmStack, startLlmStack } from '../support/llm-stack';
import { NESTED, nestedJson, pollutingKeys, prototypePolluted } from '../support/probing';
import { toolResults } from '../support/scripted-llm';
import { TestSocket } from '../support/test-socket';

const MCP_TOKEN = 'probe-mcp-token';

/** Wrong items, 450,000 by default: a 1 MB call whose every element breaks the schema. */
const badList = (count = 450_000) => ({ labels: Array(count).fill(1) });

/** Good labels and 80,000 arguments the tool does not take. */
function unknownArguments(): Record<string, unknown> {
  const args: Record<string, unknown> = { labels: ['a'] };
  for (let index = 0; index < 80_000; index += 1) args[`k${index}`] = 1;
  return args;
}

/** Longest refusal of bad arguments a caller may get: a few problems, not one per bad element. */
const SMALL = 2_000;

/**
 * Tool arguments as any caller can send them (UTCP, MCP, LiteMCP, UTCP over HTTP, the model
 * through the LLM gateway): a megabyte of bad elements, tens of thousands of unknown names, a
 * value nested 10,000 deep, keys that would pollute prototypes. Each is refused as bad
 * arguments, in a few words, and the tool answers good arguments afterwards.
 */
describe('probing: tool arguments on every protocol', () => {
  let stack: LlmStack;
  let calls = 0;

  beforeAll(async () => {
    stack = await startLlmStack({ MCP_WS_AUTH_TOKEN: MCP_TOKEN, MCP_WS_MAX_CONNECTIONS: 10 });
    stack.gateway.app.get(ToolRegistryService).register({
      name: 'probe.labels',
      description: 'Counts labels',
      source: 'module',
      inputSchema: { type: 'object', properties: { labels: { type: 'array', items: { type: 'string' } } }, required: ['labels'], additionalProperties: false },
      handler: ({ labels }) => {
        calls += 1;
        return (labels as string[]).length;
      },
    });
  });
  afterAll(() => stack.close());

  /** Each case's arguments as JSON text. (Nested 10,000 deep inside a WebSocket frame, they make the frame itself invalid: see probing-malformed-ws.) */
  const BAD_ARGUMENTS: [string, () => string, RegExp][] = [
    ['a 1 MB list of wrong items', () => JSON.stringify(badList()), /labels\.0" must be string/],
    ['80,000 unknown arguments', () => JSON.stringify(unknownArguments()), /unexpected argument "k0"/],
  ];

  it.each(BAD_ARGUMENTS)('UTCP /utcp: refuses %s as INVALID_TOOL_PARAMETERS in a few words', async (_name, args, problem) => {
    const socket = await TestSocket.open(stack.gateway.ws('/utcp'));
    socket.send(`{"type":"call","id":1,"tool":"probe.labels","params":${args()}}`);
    const answer = await socket.nextText(10_000);
    expect(answer.length).toBeLessThan(SMALL);
    expect(JSON.parse(answer)).toMatchObject({ type: 'error', id: 1, error: { code: 'INVALID_TOOL_PARAMETERS', message: expect.stringMatching(problem) } });
    socket.send({ type: 'call', id: 2, tool: 'probe.labels', params: { labels: ['a', 'b'] } });
    expect(await socket.next()).toMatchObject({ type: 'result', id: 2, result: 2 });
    await socket.close();
  });

  it.each(BAD_ARGUMENTS)('MCP tools/call: refuses %s as a tool error in a few words', async (_name, args, problem) => {
    const socket = await TestSocket.open(stack.gateway.ws('/mcp'), { headers: { Authorization: `Bearer ${MCP_TOKEN}` }, protocols: ['mcp'] });
    socket.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"probe.labels","arguments":${args()}}}`);
    const answer = await socket.nextText(10_000);
    expect(answer.length).toBeLessThan(SMALL);
    expect(JSON.parse(answer)).toMatchObject({ id: 1, result: { isError: true, content: [{ type: 'text', text: expect.stringMatching(problem) }] } });
    socket.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'probe.labels', arguments: { labels: ['a'] } } });
    expect(await socket.next()).toMatchObject({ id: 2, result: { content: [{ type: 'text', text: '1' }] } });
    await socket.close();
  });

  it.each([...BAD_ARGUMENTS, ['a value nested 10,000 deep', () => nestedJson({ labels: NESTED }), /nest deeper than 64 levels/] as const])(
    'UTCP over HTTP: refuses %s with 400 in a few words',
    async (_name, args, problem) => {
      const response = await fetch(stack.gateway.http('/utcp/probe.labels'), { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: args() });
      const body = await response.text();
      expect(response.status).toBe(400);
      expect(body.length).toBeLessThan(SMALL);
      expect(JSON.parse(body)).toMatchObject({ type: 'tool_error', code: 'INVALID_TOOL_PARAMETERS', error: expect.stringMatching(problem) });
    },
  );

  it('LiteMCP: refuses a positional value holding a 1 MB list of wrong items in a few words', async () => {
    const response = await fetch(stack.gateway.http('/litemcp/probe.labels'), {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ tool: 'probe.labels', arguments: [JSON.stringify(badList().labels)] }),
    });
    const answer = (await response.json()) as any;
    expect(response.status).toBe(400);
    // LiteMCP's CallResult echoes the positional values by name; its refusal is what must be short.
    expect(answer).toMatchObject({ response: { error: true, content: [{ data: expect.stringMatching(/labels\.0" must be string/) }] } });
    expect(answer.response.content[0].data.length).toBeLessThan(SMALL);
  });

  it('the LLM gateway: feeds the model a short refusal of its 20,000 wrong items', async () => {
    // Fewer than elsewhere: the scripted model streams arguments five characters a chunk.
    stack.llm.reply({ toolCalls: [{ name: 'probe.labels', arguments: badList(20_000) }] }, (request) => ({ text: JSON.stringify(toolResults(request)) }));
    const client = await stack.connect();
    client.send({ type: 'text_input', text: 'count them' });
    const frames = await client.until('llm_response');
    const toolCall = frames.find((frame) => frame.type === 'tool_call');
    expect(toolCall).toMatchObject({ tool_name: 'probe.labels', success: false, result: { error: { code: 'INVALID_TOOL_PARAMETERS' } } });
    expect(JSON.stringify(toolCall.result).length).toBeLessThan(SMALL);
    const fedBack = stack.llm.requests[1].messages.find((message) => message.role === 'tool')!.content!;
    expect(fedBack.length).toBeLessThan(SMALL);
    await client.close();
  });

  it('refuses __proto__ and constructor arguments as unknown ones on every protocol, and pollutes nothing', async () => {
    const before = calls;
    const args = { labels: ['a'], ...pollutingKeys() };
    const utcp = await TestSocket.open(stack.gateway.ws('/utcp'));
    utcp.send({ type: 'call', id: 1, tool: 'probe.labels', params: args });
    expect(await utcp.next()).toMatchObject({ error: { code: 'INVALID_TOOL_PARAMETERS', message: expect.stringMatching(/unexpected argument "__proto__"/) } });
    await utcp.close();
    const mcp = await TestSocket.open(stack.gateway.ws('/mcp'), { headers: { Authorization: `Bearer ${MCP_TOKEN}` }, protocols: ['mcp'] });
    mcp.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'probe.labels', arguments: args } });
    expect(await mcp.next()).toMatchObject({
      result: { isError: true, content: [{ text: expect.stringMatching(/unexpected argument "(__proto__|constructor)"/) }] },
    });
    await mcp.close();
    const http = await fetch(stack.gateway.http('/utcp/probe.labels'), {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(args),
    });
    expect(http.status).toBe(400);
    expect(calls).toBe(before);
    expect(prototypePolluted()).toBe(false);
  });
});
