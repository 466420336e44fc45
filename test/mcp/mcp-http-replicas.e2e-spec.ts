import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type Redis from 'ioredis';
import type { EnvironmentInput } from '../../src/config/environment';
import { MCP_HTTP_SESSION_STORE, McpHttpSessionStore } from '../../src/mcp/transports/http/mcp-http-session-store';
import { McpHttpSessions } from '../../src/mcp/transports/http/mcp-http-sessions.service';
import { Sdk1Binder } from '../../src/mcp/revisions/2025/sdk1-binder';
import { RunningGateway, startGateway } from '../support/gateway';
import { bearer, initializeOn, inSession, mcpHttp, reroutableTransport, TOOLS_LIST } from '../support/mcp-http';
import { inspector, removeKeys, TEST_REDIS_URL, uniquePrefix } from '../support/redis';
import { TcpProxy } from '../support/tcp-proxy';
import { until } from '../support/upstreams';

const sessionsOf = (gateway: RunningGateway) => gateway.app.get(McpHttpSessions);

const client = () => new Client({ name: 'replica-e2e', version: '1.0.0' }, { capabilities: { roots: { listChanged: true } } });

/** Every key of a session's record in Redis (one hash, whatever the principal's tag). */
async function recordKeys(redis: Redis, prefix: string, sessionId: string): Promise<string[]> {
  return redis.keys(`${prefix}mcp-http:*:session:${sessionId}`);
}

interface Replicas {
  redis: Redis;
  a: RunningGateway;
  b: RunningGateway;
}

/**
 * Two gateways started with `settings` (sharing Redis under `prefix`) before the tests of the
 * describe it is called in, handed to `use`; closed, and their keys removed, after them.
 */
function twoReplicas(settings: EnvironmentInput, prefix: string, use: (replicas: Replicas) => void): void {
  let replicas: Partial<Replicas> = {};
  beforeAll(async () => {
    const redis = await inspector();
    const [a, b] = await Promise.all([startGateway(settings), startGateway(settings)]);
    replicas = { redis, a, b };
    use({ redis, a, b });
  });
  afterAll(async () => {
    await Promise.all([replicas.a?.close(), replicas.b?.close()]);
    if (replicas.redis) {
      await removeKeys(replicas.redis, prefix);
      replicas.redis.disconnect();
    }
  });
}

describe('MCP Streamable HTTP sessions on any replica sharing Redis', () => {
  const prefix = uniquePrefix();
  const shared: EnvironmentInput = { REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: prefix, AUTH_TOKENS: 'alice,bob' };
  let redis: Redis;
  let a: RunningGateway;
  let b: RunningGateway;
  twoReplicas(shared, prefix, (started) => ({ redis, a, b } = started));

  it('serves tools/list and tools/call on B for a session initialized on A, rebuilt there from its record', async () => {
    const route = reroutableTransport(a, 'alice');
    const mcp = client();
    await mcp.connect(route.transport);
    const sessionId = route.transport.sessionId!;
    expect(sessionsOf(b).size).toBe(0);

    const [key] = await recordKeys(redis, prefix, sessionId);
    const record = JSON.parse((await redis.hget(key, 'record'))!);
    expect(record).toMatchObject({
      sessionId,
      principal: expect.stringMatching(/^token:/),
      initialize: {
        protocolVersion: expect.any(String),
        capabilities: { roots: { listChanged: true } },
        clientInfo: { name: 'replica-e2e', version: '1.0.0' },
      },
    });

    route.to(b);
    const { tools } = await mcp.listTools();
    expect(tools.map((tool) => tool.name)).toContain('calculator');
    expect(await mcp.callTool({ name: 'calculator', arguments: { a: 2, b: 3 } })).toEqual({ content: [{ type: 'text', text: '5' }] });
    expect(sessionsOf(b).size).toBe(1);
    await mcp.close();
  });

  it("refreshes the record's expiry and last use on every request", async () => {
    const started = await initializeOn(a, 'alice');
    const [key] = await recordKeys(redis, prefix, started.sessionId!);
    expect(await redis.pttl(key)).toBeGreaterThan(3_500_000); // CLOUD_SESSION_TIMEOUT, 3600 s
    await redis.multi().pexpire(key, 5000).hset(key, 'lastUsedAt', '0').exec();
    const sent = Date.now();
    expect((await mcpHttp(b, { body: TOOLS_LIST, headers: { ...bearer('alice'), ...inSession(started.sessionId!) } })).status).toBe(200);
    expect(await redis.pttl(key)).toBeGreaterThan(3_500_000);
    expect(Number(await redis.hget(key, 'lastUsedAt'))).toBeGreaterThanOrEqual(sent);
  });

  it('answers another token 404 on both replicas', async () => {
    const started = await initializeOn(a, 'alice');
    for (const gateway of [b, a]) {
      const stranger = await mcpHttp(gateway, { body: TOOLS_LIST, headers: { ...bearer('bob'), ...inSession(started.sessionId!) } });
      expect(stranger.status).toBe(404);
      expect(stranger.json()).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32001, message: expect.stringMatching(/Session not found/) } });
    }
    expect((await mcpHttp(b, { body: TOOLS_LIST, headers: { ...bearer('alice'), ...inSession(started.sessionId!) } })).status).toBe(200);
  });

  it('ends a session everywhere on DELETE at B: A, which holds a copy, answers 404 next and drops it', async () => {
    const route = reroutableTransport(a, 'alice');
    const mcp = client();
    await mcp.connect(route.transport);
    const sessionId = route.transport.sessionId!;
    const heldByA = () => sessionsOf(a)['sessions'].has(sessionId);
    expect(heldByA()).toBe(true);

    route.to(b);
    await route.transport.terminateSession();
    expect(await recordKeys(redis, prefix, sessionId)).toEqual([]);

    const onA = await mcpHttp(a, { body: TOOLS_LIST, headers: { ...bearer('alice'), ...inSession(sessionId) } });
    expect(onA.status).toBe(404);
    expect(onA.json()).toMatchObject({ error: { code: -32001 } });
    expect(heldByA()).toBe(false);
    await mcp.close();
  });

  it('goes on on B once A has shut down', async () => {
    const c = await startGateway(shared);
    const route = reroutableTransport(c, 'alice');
    const mcp = client();
    await mcp.connect(route.transport);
    const sessionId = route.transport.sessionId!;
    route.to(b);
    await c.close();

    expect(await recordKeys(redis, prefix, sessionId)).toHaveLength(1);
    expect(await mcp.callTool({ name: 'calculator', arguments: { a: 4, b: 5 } })).toEqual({ content: [{ type: 'text', text: '9' }] });
    await mcp.close();
  });

  it('rebuilds a session once when many requests for it reach a replica at once', async () => {
    const started = await initializeOn(a, 'alice');
    const d = await startGateway(shared);
    const serversMade = jest.spyOn(d.app.get(Sdk1Binder), 'createServer');
    // Redis answers within a millisecond; a slower answer lets every request arrive while the first is looked up.
    const store = d.app.get<McpHttpSessionStore>(MCP_HTTP_SESSION_STORE);
    const claim = store.claim.bind(store);
    jest.spyOn(store, 'claim').mockImplementation(async (...args) => {
      await new Promise((resolve) => setTimeout(resolve, 200));
      return claim(...args);
    });
    try {
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          mcpHttp(d, { body: { ...TOOLS_LIST, id: 10 + i }, headers: { ...bearer('alice'), ...inSession(started.sessionId!) } }),
        ),
      );
      expect(answers.map((answer) => answer.status)).toEqual(Array(8).fill(200));
      expect(serversMade).toHaveBeenCalledTimes(1);
      expect(sessionsOf(d).size).toBe(1);
    } finally {
      await d.close();
    }
  });
});

describe('MCP Streamable HTTP sessions whose streams stay open on a replica', () => {
  const prefix = uniquePrefix();
  const shared: EnvironmentInput = {
    REDIS_URL: TEST_REDIS_URL,
    REDIS_KEY_PREFIX: prefix,
    AUTH_TOKENS: 'alice',
    CLOUD_SESSION_TIMEOUT: 1,
    CLOUD_SESSION_CLEANUP_INTERVAL: 0.1,
  };
  let redis: Redis;
  let a: RunningGateway;
  let b: RunningGateway;
  twoReplicas(shared, prefix, (started) => ({ redis, a, b } = started));

  it('keep their record alive past CLOUD_SESSION_TIMEOUT, so another replica still takes them over', async () => {
    const route = reroutableTransport(a, 'alice');
    const mcp = client();
    await mcp.connect(route.transport); // the client holds its GET stream open on A
    await new Promise((resolve) => setTimeout(resolve, 1500));
    route.to(b);
    expect((await mcp.listTools()).tools.length).toBeGreaterThan(0);
    await mcp.close();
  });

  it('end there soon after a DELETE on another replica', async () => {
    const route = reroutableTransport(a, 'alice');
    const mcp = client();
    await mcp.connect(route.transport);
    const sessionId = route.transport.sessionId!;
    // Wait for the client's GET stream to be open on A.
    await until(() => sessionsOf(a)['sessions'].get(sessionId)?.busy === true, 3000, 'the stream on A');
    const deleted = await mcpHttp(b, { method: 'DELETE', headers: { ...bearer('alice'), ...inSession(sessionId) } });
    expect(deleted.status).toBe(200);
    await until(() => !sessionsOf(a)['sessions'].has(sessionId), 3000, 'A to drop its copy');
    await mcp.close();
  });

  it('expire with no request nor stream: then 404 on every replica', async () => {
    const started = await initializeOn(a, 'alice');
    await until(async () => (await recordKeys(redis, prefix, started.sessionId!)).length === 0, 5000, 'the record to expire');
    for (const gateway of [a, b]) {
      expect((await mcpHttp(gateway, { body: TOOLS_LIST, headers: { ...bearer('alice'), ...inSession(started.sessionId!) } })).status).toBe(404);
    }
  });
});

describe('MCP Streamable HTTP sessions without REDIS_URL', () => {
  it('stay on the instance that started them, as before', async () => {
    const [a, b] = await Promise.all([startGateway({ AUTH_TOKENS: 'alice' }), startGateway({ AUTH_TOKENS: 'alice' })]);
    try {
      const started = await initializeOn(a, 'alice');
      const headers = { ...bearer('alice'), ...inSession(started.sessionId!) };
      expect((await mcpHttp(b, { body: TOOLS_LIST, headers })).status).toBe(404);
      expect((await mcpHttp(a, { body: TOOLS_LIST, headers })).status).toBe(200);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});

describe('MCP Streamable HTTP sessions while Redis is away', () => {
  it('refuses new sessions with 503, serves those held here, and starts new ones again once Redis is back', async () => {
    const prefix = uniquePrefix();
    const [host, port] = new URL(TEST_REDIS_URL).host.split(':');
    const proxy = await TcpProxy.start(host, Number(port || 6379));
    const gateway = await startGateway({ REDIS_URL: `redis://127.0.0.1:${proxy.port}`, REDIS_KEY_PREFIX: prefix, AUTH_TOKENS: 'alice' });
    const redis = await inspector();
    try {
      const held = await initializeOn(gateway, 'alice');
      proxy.interrupt();

      const refused = await initializeOn(gateway, 'alice');
      expect(refused.status).toBe(503);
      expect(refused.json()).toEqual({ jsonrpc: '2.0', id: 1, error: { code: -32000, message: 'MCP session store unavailable; try again later' } });
      const stranger = await mcpHttp(gateway, { body: TOOLS_LIST, headers: { ...bearer('alice'), ...inSession('5d0b6a4e-3c2f-4e1a-9b8c-7d6e5f4a3b2c') } });
      expect(stranger.status).toBe(503);
      expect((await mcpHttp(gateway, { body: TOOLS_LIST, headers: { ...bearer('alice'), ...inSession(held.sessionId!) } })).status).toBe(200);

      proxy.restore();
      let status = 0;
      await until(async () => (status = (await initializeOn(gateway, 'alice')).status) === 200, 15_000, 'Redis to come back');
      expect(status).toBe(200);
    } finally {
      await gateway.close();
      await proxy.close();
      await removeKeys(redis, prefix);
      redis.disconnect();
    }
  });
});
