import { ConnectionRegistry } from '../../src/core/ws/connection-registry';
import { RunningGateway, startGateway } from '../support/gateway';
import { eventually } from '../support/probing';
import { TestSocket } from '../support/test-socket';

/** A client whose machine went away: its socket is not read any more, so no pong ever comes back. */
const goSilent = (client: TestSocket) => (client.socket as unknown as { _socket: { pause(): void } })._socket.pause();
const wakeUp = (client: TestSocket) => (client.socket as unknown as { _socket: { resume(): void } })._socket.resume();

/**
 * Keep-alive is decided on the route, once, for every protocol: a peer that stops answering is
 * closed after its route's timeout, whatever the protocol, and one that answers is kept.
 */
describe('keep-alive on every WebSocket route', () => {
  let gateway: RunningGateway;
  const TOKEN = 'keep-alive-token';

  beforeAll(async () => {
    gateway = await startGateway({
      AUTH_TOKENS: TOKEN,
      CLOUD_PING_INTERVAL: 0.05,
      CLOUD_PING_TIMEOUT: 0.4,
      MCP_WS_HEARTBEAT_INTERVAL: 50,
      MCP_WS_HEARTBEAT_TIMEOUT: 400,
    });
  });
  afterAll(() => gateway.close());

  const headers = { Authorization: `Bearer ${TOKEN}` };

  it.each([
    ['the LLM gateway', '/', 1001],
    ['LiteMCP', '/litemcp/calculator', 1001],
    ['UTCP', '/utcp', 1001],
    ['UTCP per tool', '/utcp/calculator', 1001],
  ])('closes a silent peer of %s after CLOUD_PING_TIMEOUT, and keeps one that answers pings', async (_name, path, code) => {
    const silent = await TestSocket.open(gateway.ws(path), { headers });
    const alive = await TestSocket.open(gateway.ws(path), { headers });
    goSilent(silent);
    const open = () => gateway.app.get(ConnectionRegistry).size;
    await eventually(() => open() === 1, 'the silent peer closed by the gateway');
    wakeUp(silent);
    expect(await silent.closed).toEqual({ code, reason: 'Heartbeat timeout' });
    expect(alive.socket.readyState).toBe(alive.socket.OPEN);
    await alive.close();
  });

  it('cuts off a silent plain MCP client after MCP_WS_HEARTBEAT_TIMEOUT (plain MCP has no goodbye)', async () => {
    const silent = await TestSocket.open(gateway.ws('/mcp'), { headers, protocols: ['mcp'] });
    goSilent(silent);
    await eventually(() => gateway.app.get(ConnectionRegistry).size === 0, 'the silent MCP client cut off');
    wakeUp(silent);
    expect(await silent.closed).toMatchObject({ code: 1006 });
  });

  it("tells a silent MCP envelope client it timed out, the spec's way", async () => {
    const silent = await TestSocket.open(gateway.ws('/mcp'));
    silent.send({ type: 'auth', token: TOKEN });
    expect(await silent.next()).toMatchObject({ type: 'auth', status: 'authenticated' });
    // Envelope pings are frames: a client that stops answering them is closed with the envelope's TIMEOUT close.
    const frames: string[] = [];
    silent.socket.on('message', (data) => frames.push(JSON.parse(data.toString()).type));
    const closed = await Promise.race([silent.closed, new Promise((resolve) => setTimeout(() => resolve('still open'), 5000))]);
    expect(closed).toMatchObject({ reason: 'Heartbeat timeout' });
    expect(frames).toContain('ping');
    expect(frames.at(-1)).toBe('close');
  });
});
