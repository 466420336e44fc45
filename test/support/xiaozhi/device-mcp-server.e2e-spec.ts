import { ScriptedConnection, ScriptedXiaozhiServer } from './scripted-xiaozhi-server';
import { DeviceTool, XiaozhiDevice, XiaozhiDeviceOptions } from './xiaozhi-device';

/** The device's MCP server, driven by a scripted server that plays the gateway's MCP client. */
describe('xiaozhi device MCP server', () => {
  let server: ScriptedXiaozhiServer;
  const devices: XiaozhiDevice[] = [];

  beforeAll(async () => {
    server = await ScriptedXiaozhiServer.start();
  });
  afterEach(async () => {
    await Promise.all(devices.splice(0).map((device) => device.close()));
  });
  afterAll(() => server.close());

  async function connected(options: XiaozhiDeviceOptions = {}): Promise<{ device: XiaozhiDevice; connection: ScriptedConnection }> {
    const device = new XiaozhiDevice(options);
    devices.push(device);
    const connecting = device.connect(server.url, 'token-1');
    const connection = await server.nextConnection();
    await connection.nextJson();
    connection.hello();
    await connecting;
    return { device, connection };
  }

  /** Sends a JSON-RPC request and reads the device's `mcp` answer as text, then parsed. */
  async function ask(connection: ScriptedConnection, payload: Record<string, unknown>): Promise<{ text: string; payload: any }> {
    connection.send({ session_id: 'session-1', type: 'mcp', payload: { jsonrpc: '2.0', ...payload } });
    const text = await connection.nextText();
    return { text, payload: JSON.parse(text).payload };
  }

  const echoTool = (name: string, description = 'Echoes its text.'): DeviceTool => ({
    name,
    description,
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    run: ({ text }) => `echo: ${text as string}`,
  });

  it('answers initialize with the firmware protocol version, its tools capability and the board as server', async () => {
    const { connection } = await connected();
    const { text } = await ask(connection, { id: 1, method: 'initialize', params: { capabilities: {} } });
    expect(text).toBe(
      '{"session_id":"session-1","type":"mcp","payload":{"jsonrpc":"2.0","id":1,"result":' +
        '{"protocolVersion":"2024-11-05","capabilities":{"tools":{}},"serverInfo":{"name":"bread-compact-wifi","version":"2.4.2"}}}}',
    );
  });

  it('lists the common tools, then the board tools, hiding user-only tools unless asked', async () => {
    const { connection } = await connected({ mcp: { tools: [echoTool('self.echo')] } });
    const listed = await ask(connection, { id: 2, method: 'tools/list', params: { cursor: '' } });
    expect(listed.payload.result.tools.map((tool: any) => tool.name)).toEqual([
      'self.get_device_status',
      'self.audio_speaker.set_volume',
      'self.light.set_rgb',
      'self.echo',
    ]);
    expect(listed.payload.result).not.toHaveProperty('nextCursor');
    expect(listed.text).toContain(
      '{"name":"self.audio_speaker.set_volume","description":"Sets the speaker volume (0-100). Read the current volume with `self.get_device_status` first when it is unknown.",' +
        '"inputSchema":{"type":"object","properties":{"volume":{"type":"integer","minimum":0,"maximum":100}},"required":["volume"]}}',
    );

    const withUserTools = await ask(connection, { id: 3, method: 'tools/list', params: { withUserTools: true } });
    const userOnly = withUserTools.payload.result.tools.filter((tool: any) => tool.annotations);
    expect(userOnly.map((tool: any) => tool.name)).toEqual(['self.get_system_info', 'self.reboot', 'self.upgrade_firmware', 'self.assets.set_download_url']);
    expect(userOnly[0].annotations).toEqual({ audience: ['user'] });
  });

  it('pages by size: each page under 8000 bytes, the cursor naming the first tool of the next page', async () => {
    const tools = Array.from({ length: 12 }, (_, index) => echoTool(`self.bulk_${index}`, 'x'.repeat(1500)));
    const { connection } = await connected({ mcp: { tools, defaultTools: false } });
    const names: string[] = [];
    let cursor = '';
    let pages = 0;
    do {
      const page = await ask(connection, { id: 10 + pages, method: 'tools/list', params: { cursor } });
      expect(Buffer.byteLength(JSON.stringify(page.payload.result))).toBeLessThanOrEqual(8000);
      const pageNames = page.payload.result.tools.map((tool: any) => tool.name);
      names.push(...pageNames);
      cursor = page.payload.result.nextCursor ?? '';
      if (cursor) expect(tools.findIndex((tool) => tool.name === cursor)).toBe(names.length);
      pages++;
    } while (cursor);
    expect(names).toEqual(tools.map((tool) => tool.name));
    expect(pages).toBe(3);
  });

  it('pages by a tool count when the test sets one', async () => {
    const { connection } = await connected({ mcp: { pageSize: 2 } });
    const first = await ask(connection, { id: 1, method: 'tools/list' });
    expect(first.payload.result.tools.map((tool: any) => tool.name)).toEqual(['self.get_device_status', 'self.audio_speaker.set_volume']);
    expect(first.text).toContain('],"nextCursor":"self.light.set_rgb"}}}');
    const second = await ask(connection, { id: 2, method: 'tools/list', params: { cursor: 'self.light.set_rgb' } });
    expect(second.payload.result).toEqual({ tools: [expect.objectContaining({ name: 'self.light.set_rgb' })] });
  });

  it('answers a tool that does not fit a page, or an unknown cursor, with the firmware error', async () => {
    const { connection } = await connected({ mcp: { tools: [echoTool('self.huge', 'y'.repeat(9000))], defaultTools: false } });
    expect((await ask(connection, { id: 1, method: 'tools/list' })).text).toBe(
      '{"session_id":"session-1","type":"mcp","payload":{"jsonrpc":"2.0","id":1,"error":{"message":"Failed to add tool self.huge because of payload size limit"}}}',
    );
    expect((await ask(connection, { id: 2, method: 'tools/list', params: { cursor: 'self.gone' } })).payload.error).toEqual({
      message: 'Failed to add tool  because of payload size limit',
    });
  });

  it('calls tools with their declared arguments and answers text content', async () => {
    const { device, connection } = await connected({ mcp: { tools: [echoTool('self.echo')] } });
    const volume = await ask(connection, { id: 5, method: 'tools/call', params: { name: 'self.audio_speaker.set_volume', arguments: { volume: 55.9 } } });
    expect(volume.text).toBe(
      '{"session_id":"session-1","type":"mcp","payload":{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"true"}],"isError":false}}}',
    );
    expect(device.board.volume).toBe(55);

    const status = await ask(connection, { id: 6, method: 'tools/call', params: { name: 'self.get_device_status', arguments: {} } });
    expect(JSON.parse(status.payload.result.content[0].text)).toMatchObject({ audio_speaker: { volume: 55 } });

    await ask(connection, { id: 7, method: 'tools/call', params: { name: 'self.light.set_rgb', arguments: { R: 255, g: 128, b: 0 } } });
    expect(device.board.rgb).toEqual({ r: 255, g: 128, b: 0 });

    const echo = await ask(connection, { id: 8, method: 'tools/call', params: { name: 'self.echo', arguments: { text: 'a "quoted" word', extra: 1 } } });
    expect(echo.payload.result.content).toEqual([{ type: 'text', text: 'echo: a "quoted" word' }]);
  });

  it('answers bad calls with JSON-RPC errors that carry a message and no code', async () => {
    const { connection } = await connected();
    const call = async (id: number, params: unknown) => (await ask(connection, { id, method: 'tools/call', params })).payload.error;
    expect(await call(1, { name: 'self.audio_speaker.set_volume', arguments: { volume: 101 } })).toEqual({ message: 'Value exceeds maximum allowed: 100' });
    expect(await call(2, { name: 'self.audio_speaker.set_volume', arguments: { volume: -1 } })).toEqual({ message: 'Value is below minimum allowed: 0' });
    expect(await call(3, { name: 'self.audio_speaker.set_volume', arguments: { volume: '50' } })).toEqual({ message: 'Missing valid argument: volume' });
    expect(await call(4, { name: 'self.nothing' })).toEqual({ message: 'Unknown tool: self.nothing' });
    expect(await call(5, { arguments: {} })).toEqual({ message: 'Missing name' });
    expect(await call(6, { name: 'self.get_device_status', arguments: [] })).toEqual({ message: 'Invalid arguments' });
    expect((await ask(connection, { id: 7, method: 'tools/call' })).payload.error).toEqual({ message: 'Missing params' });
    expect((await ask(connection, { id: 8, method: 'resources/list' })).payload.error).toEqual({ message: 'Method not implemented: resources/list' });
  });

  it('answers no notification, and no request whose id is not a number or whose params are not an object', async () => {
    const { device, connection } = await connected();
    const send = (payload: unknown) => connection.send({ session_id: 'session-1', type: 'mcp', payload });
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    send({ jsonrpc: '2.0', id: 'text-id', method: 'initialize' });
    send({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: [] });
    send({ jsonrpc: '1.0', id: 2, method: 'tools/list' });
    send({ jsonrpc: '2.0', id: 3 });
    send([{ jsonrpc: '2.0', id: 4, method: 'initialize' }]);
    send({ jsonrpc: '2.0', id: 5, method: 'initialize' });
    expect(JSON.parse(await connection.nextText()).payload.id).toBe(5);
    expect(device.mcp.seen.map((request) => request.handled)).toEqual([false, false, false, false, false, true]);
  });

  it('answers one request at a time, in order, a slow tool holding back the answers after it', async () => {
    const slow: DeviceTool = { ...echoTool('self.slow'), delayMs: 300, run: async () => 'done' };
    const { connection } = await connected({ mcp: { tools: [slow] } });
    const started = Date.now();
    connection.send({ type: 'mcp', payload: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'self.slow', arguments: { text: '' } } } });
    connection.send({ type: 'mcp', payload: { jsonrpc: '2.0', id: 2, method: 'initialize' } });
    expect(JSON.parse(await connection.nextText()).payload).toMatchObject({ id: 1, result: { content: [{ text: 'done' }] } });
    expect(JSON.parse(await connection.nextText()).payload.id).toBe(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
  });

  it('turns a tool that throws into an error with its message', async () => {
    const failing: DeviceTool = {
      ...echoTool('self.fail'),
      run: () => {
        throw new Error('Failed to capture photo');
      },
    };
    const { connection } = await connected({ mcp: { tools: [failing] } });
    const answer = await ask(connection, { id: 9, method: 'tools/call', params: { name: 'self.fail', arguments: { text: 'x' } } });
    expect(answer.payload).toEqual({ jsonrpc: '2.0', id: 9, error: { message: 'Failed to capture photo' } });
  });

  describe('misbehaving on purpose', () => {
    it('never answers the methods it is silent to', async () => {
      const { connection } = await connected({ mcp: { misbehave: { silentTo: ['tools/call'] } } });
      connection.send({ type: 'mcp', payload: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'self.get_device_status' } } });
      expect(await connection.quietText(300)).toBeUndefined();
      expect((await ask(connection, { id: 2, method: 'initialize' })).payload.id).toBe(2);
    });

    it('answers with an id the request did not have', async () => {
      const { connection } = await connected({ mcp: { misbehave: { wrongIdFor: ['initialize'] } } });
      expect((await ask(connection, { id: 3, method: 'initialize' })).payload.id).toBe(1_000_003);
    });

    it('answers with an error instead of the result', async () => {
      const { connection } = await connected({ mcp: { misbehave: { errorFor: ['*'] } } });
      expect((await ask(connection, { id: 4, method: 'tools/list' })).payload).toEqual({
        jsonrpc: '2.0',
        id: 4,
        error: { message: 'Simulated failure of tools/list' },
      });
    });

    it('names a next cursor on every page, so a client that follows it never ends', async () => {
      const { connection } = await connected({ mcp: { pageSize: 2, misbehave: { endlessToolsList: true } } });
      let cursor = '';
      for (let page = 0; page < 6; page++) {
        const answer = await ask(connection, { id: page, method: 'tools/list', params: { cursor } });
        cursor = answer.payload.result.nextCursor;
        expect(cursor).toEqual(expect.any(String));
      }
      expect(cursor).not.toBe('');
    });
  });

  it('reboots a second after answering self.reboot, dropping the connection', async () => {
    const { device, connection } = await connected();
    const answer = await ask(connection, { id: 1, method: 'tools/call', params: { name: 'self.reboot', arguments: {} } });
    expect(answer.payload.result.content[0].text).toBe('true');
    const closed = await device.waitForClose(3000);
    expect(closed.atMs).toBeGreaterThan(0);
    expect(device.board.rebootRequests).toBe(1);
    expect(device.connected).toBe(false);
  });
});
