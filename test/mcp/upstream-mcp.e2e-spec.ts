import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { WebSocketClientTransport } from '@modelcontextprotocol/sdk/client/websocket.js';
import { ErrorCode, McpError, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { ToolCatalogueChange } from '../../src/core/tools/tool-definition';
import { ToolRegistryService } from '../../src/core/tools/tool-registry.service';
import { HttpUpstream, text, UpstreamTool } from '../support/http-upstream';
import { LiteMcpClient } from '../support/litemcp-client';
import { LlmStack, startLlmStack } from '../support/llm-stack';
import { toolResults } from '../support/scripted-llm';
import { provideGlobalWebSocket } from '../support/sdk-websocket';
import { TestSocket } from '../support/test-socket';
import { EVERYTHING_SERVER, isRunning, serversFile, until, upstreamIn, upstreamStatus } from '../support/upstreams';
import { Utcp01Client } from '../support/utcp01-client';

provideGlobalWebSocket();

const MCP_TOKEN = 'mcp-secret';
const UPSTREAM_TOKEN = 'upstream-token-5f2c9a71';

/** Tools of the HTTP upstream "home", with MCP names our naming rule does not allow as they are. */
function homeTools(): { tools: UpstreamTool[]; entered: () => Promise<void> } {
  let enter: () => void = () => undefined;
  let entering = new Promise<void>((resolve) => (enter = resolve));
  const tools: UpstreamTool[] = [
    {
      tool: {
        name: 'set-light',
        description: 'Turns a light on or off',
        inputSchema: { type: 'object', properties: { room: { type: 'string' }, on: { type: 'boolean' } }, required: ['room', 'on'] },
      },
      run: ({ room, on }) => text(`The ${room} light is ${on ? 'on' : 'off'}`),
    },
    {
      tool: { name: 'fail', description: 'Fails as a tool does', inputSchema: { type: 'object' } },
      run: () => ({ content: [{ type: 'text', text: 'The hub is out of reach' }], isError: true }),
    },
    {
      tool: { name: 'refuse', description: 'Answers a JSON-RPC error quoting its credentials', inputSchema: { type: 'object' } },
      run: () => {
        throw new Error(`Token ${UPSTREAM_TOKEN} may not do that`);
      },
    },
    {
      tool: {
        name: 'whoami',
        description: 'Succeeds, echoing the credentials it was called with',
        inputSchema: { type: 'object' },
        outputSchema: { type: 'object', properties: { token: { type: 'string' } } },
      },
      run: () => ({ content: [{ type: 'text', text: `You called with Bearer ${UPSTREAM_TOKEN}` }], structuredContent: { token: UPSTREAM_TOKEN } }),
    },
    {
      tool: { name: 'wait', description: 'Answers after a long time', inputSchema: { type: 'object' } },
      run: () => {
        enter();
        return new Promise(() => undefined);
      },
    },
  ];
  return {
    tools,
    entered: async () => {
      await entering;
      entering = new Promise<void>((resolve) => (enter = resolve));
    },
  };
}

describe('upstream MCP servers, served on every protocol', () => {
  let home: HttpUpstream;
  let homeEntered: () => Promise<void>;
  let file: { path: string; remove(): void };
  let stack: LlmStack;
  let registry: ToolRegistryService;
  let mcp: Client;

  beforeAll(async () => {
    const { tools, entered } = homeTools();
    homeEntered = entered;
    home = await HttpUpstream.start(UPSTREAM_TOKEN, tools);
    file = serversFile({
      everything: EVERYTHING_SERVER,
      home: { url: home.url(), headers: { Authorization: `Bearer ${UPSTREAM_TOKEN}` } },
    });
    stack = await startLlmStack({
      MCP_SERVERS_FILE: file.path,
      MCP_WS_AUTH_TOKEN: MCP_TOKEN,
      MCP_WS_MAX_CONNECTIONS: 10,
      MCP_UPSTREAM_RETRY_MIN: 0.1,
      MCP_UPSTREAM_RETRY_MAX: 0.5,
    });
    registry = stack.gateway.app.get(ToolRegistryService);
    await upstreamIn(stack.gateway, 'everything', 'connected');
    await upstreamIn(stack.gateway, 'home', 'connected');
  });

  afterAll(async () => {
    await stack?.close();
    await home?.kill();
    file?.remove();
  });

  beforeEach(async () => {
    stack.llm.reset();
    mcp = new Client({ name: 'upstream-e2e', version: '1.0.0' });
    await mcp.connect(new WebSocketClientTransport(new URL(stack.gateway.ws(`/mcp?token=${MCP_TOKEN}`))));
  });
  afterEach(() => mcp.close());

  it("adds each upstream's tools under its prefix, names made valid, with their schemas", async () => {
    const sum = registry.get('everything.get_sum');
    expect(sum).toMatchObject({
      source: 'mcp:everything',
      inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
    });
    expect(registry.get('everything.get_structured_content')?.outputSchema).toMatchObject({
      type: 'object',
      properties: { temperature: { type: 'number' } },
    });
    expect(registry.get('home.set_light')).toMatchObject({ source: 'mcp:home', description: 'Turns a light on or off' });

    const everything = await upstreamStatus(stack.gateway, 'everything');
    expect(everything).toMatchObject({ state: 'connected', transport: 'stdio', pid: expect.any(Number), failures: 0, calls_in_flight: 0 });
    expect(everything.tools).toBe(registry.list().filter((tool) => tool.source === 'mcp:everything').length);
    expect(await upstreamStatus(stack.gateway, 'home')).toMatchObject({ state: 'connected', transport: 'streamable-http', tools: 5 });
    expect(home.requests.every((request) => request.headers.authorization === `Bearer ${UPSTREAM_TOKEN}`)).toBe(true);
  });

  it('lets the model call upstream tools through the LLM gateway, and reads their content as text', async () => {
    const client = await stack.connect();
    stack.llm.reply(
      {
        toolCalls: [
          { id: 'sum', name: 'everything.get_sum', arguments: { a: 2, b: 3 } },
          { id: 'light', name: 'home.set_light', arguments: { room: 'kitchen', on: true } },
          { id: 'image', name: 'everything.get_tiny_image', arguments: {} },
        ],
      },
      (request) => ({ text: `${toolResults(request).sum} ${toolResults(request).light}` }),
    );
    client.send({ type: 'text_input', text: 'Add 2 and 3, light the kitchen, show me an image' });
    const frames = await client.until('llm_response');
    const offered = stack.llm.requests[0].tools!.find((tool) => tool.function.name === 'home.set_light');
    expect(offered?.function.parameters).toMatchObject({ properties: { room: { type: 'string' } }, required: ['room', 'on'] });

    const calls = Object.fromEntries(frames.filter((frame) => frame.type === 'tool_call').map((frame) => [frame.tool_name, frame]));
    expect(calls['everything.get_sum']).toMatchObject({ success: true, result: 'The sum of 2 and 3 is 5.' });
    expect(calls['home.set_light']).toMatchObject({ success: true, arguments: { room: 'kitchen', on: true }, result: 'The kitchen light is on' });
    const fedBack = stack.llm.requests[1].messages.filter((message) => message.role === 'tool').map((message) => message.content);
    expect(fedBack).toEqual(['The sum of 2 and 3 is 5.', 'The kitchen light is on', expect.stringMatching(/\[image image\/png\]/)]);
    expect(frames.pop()).toMatchObject({ type: 'llm_response', content: 'The sum of 2 and 3 is 5. The kitchen light is on' });
    await client.close();
  });

  it('serves upstream tools over MCP with their content blocks, structured content and failures', async () => {
    const { tools } = await mcp.listTools();
    const structured = tools.find((tool) => tool.name === 'everything.get_structured_content');
    expect(structured?.outputSchema).toMatchObject({ type: 'object', properties: { conditions: { type: 'string' } } });
    expect(tools.find((tool) => tool.name === 'home.set_light')?.inputSchema).toMatchObject({ required: ['room', 'on'] });

    const image = await mcp.callTool({ name: 'everything.get_tiny_image', arguments: {} });
    expect(image.content).toEqual(expect.arrayContaining([{ type: 'image', data: expect.stringMatching(/^iVBOR/), mimeType: 'image/png' }]));
    const weather = await mcp.callTool({ name: 'everything.get_structured_content', arguments: { location: 'Chicago' } });
    expect(weather.structuredContent).toEqual({ temperature: expect.any(Number), conditions: expect.any(String), humidity: expect.any(Number) });

    expect(await mcp.callTool({ name: 'home.fail', arguments: {} })).toEqual({
      content: [{ type: 'text', text: 'The hub is out of reach' }],
      isError: true,
    });
    const refused = await mcp.callTool({ name: 'home.refuse', arguments: {} });
    expect(refused).toMatchObject({ isError: true, content: [{ text: expect.stringMatching(/Token \*\*\* may not do that/) }] });
    expect(JSON.stringify(refused)).not.toContain(UPSTREAM_TOKEN);
    const echoed = await mcp.callTool({ name: 'home.whoami', arguments: {} });
    expect(echoed).toMatchObject({ content: [{ text: 'You called with ***' }], structuredContent: { token: '***' } });
    expect(JSON.stringify(echoed)).not.toContain(UPSTREAM_TOKEN);
    expect(await mcp.callTool({ name: 'everything.get_sum', arguments: { a: 'two' } })).toMatchObject({
      isError: true,
      content: [{ text: expect.stringMatching(/Invalid arguments for tool "everything.get_sum"/) }],
    });
  });

  it('serves upstream tools over LiteMCP, one endpoint each', async () => {
    const client = await LiteMcpClient.connect(stack.gateway.ws('/litemcp/everything.get_sum'));
    expect(await client.info()).toMatchObject({
      name: 'everything.get_sum',
      parameters: [
        { name: 'a', type: 'number' },
        { name: 'b', type: 'number' },
      ],
    });
    expect((await client.call('everything.get_sum', ['2', '3'])).response).toEqual({
      content: [{ type: 'text', data: 'The sum of 2 and 3 is 5.' }],
      error: false,
    });
    client.close();

    const image = await fetch(stack.gateway.http('/litemcp/everything.get_tiny_image'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ version: [1, 0, 0], tool: 'everything.get_tiny_image', arguments: [] }),
    });
    expect(((await image.json()) as any).response.content).toEqual(expect.arrayContaining([{ type: 'image/png', data: expect.stringMatching(/^iVBOR/) }]));
  });

  it('serves upstream tools over UTCP: in the manual, and called by 0.1 frames and on their own path', async () => {
    const manual = await Utcp01Client.discoverOverHttp(stack.gateway.http('/utcp'));
    const sum = manual.tools.find((tool: { name: string }) => tool.name === 'everything.get_sum');
    expect(sum).toMatchObject({ inputs: { properties: { a: { type: 'number' }, b: { type: 'number' } } }, tags: [] });
    expect(sum.tool_call_template.url).toBe(stack.gateway.ws('/utcp/everything.get_sum'));

    const client = await Utcp01Client.connect(stack.gateway.ws('/utcp'));
    expect((await client.call('everything.get_sum', { a: 2, b: 3 })).result).toBe('The sum of 2 and 3 is 5.');
    await expect(client.call('home.fail', {})).rejects.toMatchObject({ error: { code: 'TOOL_EXECUTION_FAILED', message: 'The hub is out of reach' } });
    await client.close();

    const perTool = await TestSocket.open(sum.tool_call_template.url);
    perTool.send({ a: 40, b: 2 });
    expect(await perTool.next()).toBe('The sum of 40 and 2 is 42.');
    perTool.send({ a: 'forty' });
    expect(await perTool.next()).toEqual({
      type: 'tool_error',
      code: 'INVALID_TOOL_PARAMETERS',
      error: expect.stringMatching(/^Invalid arguments for tool "everything.get_sum"/),
    });
    await perTool.close();
    const light = await TestSocket.open(stack.gateway.ws('/utcp/home.set_light'));
    light.send({ room: 'kitchen', on: true });
    expect(await light.next()).toBe('The kitchen light is on');
    await light.close();
  });

  it("follows the upstream's tools/list_changed, and every MCP client hears of it", async () => {
    await mcp.listTools();
    let notified = 0;
    mcp.setNotificationHandler(ToolListChangedNotificationSchema, () => void (notified += 1));
    await home.setTool({
      tool: { name: 'open/door', description: 'Opens the door', inputSchema: { type: 'object' } },
      run: () => text('The door is open'),
    });
    await until(() => registry.get('home.open_door') !== undefined, 20_000, 'home.open_door');
    await until(() => notified > 0, 20_000, 'list_changed');
    expect(await mcp.callTool({ name: 'home.open_door', arguments: {} })).toEqual({ content: [{ type: 'text', text: 'The door is open' }] });

    await home.removeTool('open/door');
    await until(() => registry.get('home.open_door') === undefined, 20_000, 'home.open_door to go');
    expect((await mcp.listTools()).tools.map((tool) => tool.name)).not.toContain('home.open_door');
  });

  it("withdraws a killed stdio upstream's tools, fails its call in flight cleanly, restarts it and brings them back", async () => {
    const changes: ToolCatalogueChange[] = [];
    const subscription = registry.changes.subscribe((change) => changes.push(change));
    const before = await upstreamStatus(stack.gateway, 'everything');

    const call = mcp.callTool({ name: 'everything.trigger_long_running_operation', arguments: { duration: 20, steps: 2 } });
    await until(async () => (await upstreamStatus(stack.gateway, 'everything')).calls_in_flight === 1, 20_000, 'the call to reach the upstream');
    process.kill(before.pid, 'SIGKILL');

    expect(await call).toEqual({ content: [{ type: 'text', text: 'MCP server "everything" went away during the call' }], isError: true });
    const after = await upstreamIn(stack.gateway, 'everything', 'connected');
    subscription.unsubscribe();

    expect(after.pid).not.toBe(before.pid);
    expect(isRunning(before.pid)).toBe(false);
    const removed = changes.filter((change) => change.type === 'removed').map((change) => change.tool.name);
    const added = changes.filter((change) => change.type === 'added').map((change) => change.tool.name);
    expect(removed).toHaveLength(before.tools);
    expect(removed.every((name) => name.startsWith('everything.'))).toBe(true);
    expect(added.sort()).toEqual(removed.sort());
    expect(await mcp.callTool({ name: 'everything.echo', arguments: { message: 'back' } })).toEqual({ content: [{ type: 'text', text: 'Echo: back' }] });
  });

  it("withdraws a dead HTTP upstream's tools with a clean error on every protocol, and takes it back when it returns", async () => {
    const callInFlight = fetch(stack.gateway.http('/litemcp/home.wait'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ version: [1, 0, 0], tool: 'home.wait', arguments: [] }),
    });
    await homeEntered();
    await home.kill();

    const inFlight = await callInFlight;
    expect(inFlight.status).toBe(503);
    // The upstream died before its answer began: whether the SDK sees the connection close or the request fail, it is a clean 503.
    expect(((await inFlight.json()) as any).response).toEqual({
      content: [
        { type: 'text', data: expect.stringMatching(/^MCP server "home" (went away during the call|cannot be reached: fetch failed \(UND_ERR_SOCKET\))$/) },
      ],
      error: true,
    });

    const down = await upstreamStatus(stack.gateway, 'home');
    expect(down).toMatchObject({ state: expect.stringMatching(/^(failed|reconnecting)$/), tools: 0, last_error: expect.stringMatching(/went away/) });
    expect(JSON.stringify(down)).not.toContain(UPSTREAM_TOKEN);
    expect(registry.list().some((tool) => tool.source === 'mcp:home')).toBe(false);

    // While it is down: LiteMCP has no such endpoint, MCP no such tool, and the model reads why its call failed.
    expect((await fetch(stack.gateway.http('/litemcp/home.set_light'))).status).toBe(404);
    await expect(mcp.callTool({ name: 'home.set_light', arguments: { room: 'hall', on: true } })).rejects.toMatchObject({
      code: ErrorCode.InvalidParams,
    } satisfies Partial<McpError>);
    const client = await stack.connect();
    stack.llm.reply({ toolCalls: [{ id: 'light', name: 'home.set_light', arguments: { room: 'hall', on: true } }] }, (request) => ({
      text: JSON.stringify(toolResults(request).light),
    }));
    client.send({ type: 'text_input', text: 'Light the hall' });
    const answer = (await client.until('llm_response')).pop();
    expect(JSON.parse(answer.content)).toEqual({ error: { code: 'TOOL_NOT_FOUND', message: 'Unknown tool "home.set_light"' } });
    expect(stack.llm.requests[0].tools!.map((tool) => tool.function.name)).not.toContain('home.set_light');

    await home.restart();
    await upstreamIn(stack.gateway, 'home', 'connected');
    expect(await mcp.callTool({ name: 'home.set_light', arguments: { room: 'hall', on: false } })).toEqual({
      content: [{ type: 'text', text: 'The hall light is off' }],
    });
    await client.close();
  });
});
