import { ToolRegistryService } from '../../src/core/tools/tool-registry.service';
import { RunningGateway, startGateway } from '../support/gateway';
import { bearer, inSession, initializeOn, modernEnvelope } from '../support/mcp-http';

const TOKEN = 'event-stream-token';
const PING_INTERVAL_S = 0.05;
/** How long each stream is read: some ten keep-alive intervals. */
const LISTEN_MS = 600;

/** What a stream said within `forMs` (or until it ended), as text. */
async function readFor(response: Response, forMs: number): Promise<string> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  const deadline = Date.now() + forMs;
  const stop = setTimeout(() => void reader.cancel().catch(() => undefined), forMs);
  try {
    while (Date.now() < deadline) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
  } catch {
    // Cancelled at the deadline.
  } finally {
    clearTimeout(stop);
    await reader.cancel().catch(() => undefined);
  }
  return text;
}

const keepAlives = (text: string) => text.split('\n').filter((line) => line.startsWith(':')).length;

/**
 * MCP's Streamable HTTP event streams, whichever SDK writes them, are kept alive as every event
 * stream of the gateway is: a comment every `CLOUD_PING_INTERVAL`, so a proxy does not close a
 * stream that is quiet while a tool works or no notification comes.
 */
describe('MCP Streamable HTTP event streams: keep-alive comments every CLOUD_PING_INTERVAL', () => {
  let gateway: RunningGateway;

  beforeAll(async () => {
    gateway = await startGateway({ AUTH_TOKENS: TOKEN, CLOUD_PING_INTERVAL: PING_INTERVAL_S });
    gateway.app.get(ToolRegistryService).register({
      name: 'probe.slow',
      description: 'Tells its progress once, then answers after a while',
      source: 'module',
      inputSchema: { type: 'object' },
      handler: async (_args, { caller }) => {
        await caller?.progress?.({ progress: 1, total: 2 });
        await new Promise((resolve) => setTimeout(resolve, LISTEN_MS + 400));
        return 'done';
      },
    });
  });
  afterAll(() => gateway.close());

  const post = (body: unknown, headers: Record<string, string>) =>
    fetch(gateway.http('/mcp'), {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...bearer(TOKEN), ...headers },
      body: JSON.stringify(body),
    });

  /** A raw 2026-07-28 request, with the binding's headers. */
  const modern = (id: number, method: string, params: Record<string, unknown>) =>
    post(
      { jsonrpc: '2.0', id, method, params: { ...params, _meta: { ...modernEnvelope(), ...(params._meta as object) } } },
      { 'mcp-protocol-version': '2026-07-28', 'mcp-method': method, ...(typeof params.name === 'string' && { 'mcp-name': params.name }) },
    );

  it("keeps a 2025 session's GET stream alive while nothing happens", async () => {
    const { sessionId } = await initializeOn(gateway, TOKEN);
    await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, inSession(sessionId!));
    const stream = await fetch(gateway.http('/mcp'), { headers: { Accept: 'text/event-stream', ...bearer(TOKEN), ...inSession(sessionId!) } });
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(keepAlives(await readFor(stream, LISTEN_MS))).toBeGreaterThanOrEqual(3);
  });

  it("keeps a 2025 call's response stream alive while its tool works, and ends it with the result", async () => {
    const { sessionId } = await initializeOn(gateway, TOKEN);
    const call = await post(
      { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'probe.slow', arguments: {}, _meta: { progressToken: 'p' } } },
      inSession(sessionId!),
    );
    const text = await readFor(call, 5000);
    expect(keepAlives(text)).toBeGreaterThanOrEqual(3);
    expect(text).toContain('"result":{"content":[{"type":"text","text":"done"}]}');
  });

  it("keeps a 2026-07-28 call's response stream alive while its tool works", async () => {
    const text = await readFor(await modern(8, 'tools/call', { name: 'probe.slow', arguments: {}, _meta: { progressToken: 'p' } }), 5000);
    expect(keepAlives(text)).toBeGreaterThanOrEqual(3);
    expect(text).toContain('"text":"done"');
  });

  it('keeps a 2026-07-28 subscriptions/listen stream alive while no list changes', async () => {
    const stream = await modern(9, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(keepAlives(await readFor(stream, LISTEN_MS))).toBeGreaterThanOrEqual(3);
  });
});
