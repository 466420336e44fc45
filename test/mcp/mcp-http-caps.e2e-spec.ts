import type Redis from 'ioredis';
import type { EnvironmentInput } from '../../src/config/environment';
import { McpHttpSessions } from '../../src/mcp/transports/http/mcp-http-sessions.service';
import { RunningGateway, startGateway } from '../support/gateway';
import { bearer, initializeOn, inSession, mcpHttp, McpHttpAnswer, TOOLS_LIST } from '../support/mcp-http';
import { inspector, removeKeys, TEST_REDIS_URL, uniquePrefix } from '../support/redis';
import { until } from '../support/upstreams';

const sessionsOf = (gateway: RunningGateway) => gateway.app.get(McpHttpSessions);

const deleteOn = (gateway: RunningGateway, token: string, sessionId: string) =>
  mcpHttp(gateway, { method: 'DELETE', headers: { ...bearer(token), ...inSession(sessionId) } });

/** The refusal of an `initialize` (id 1) in the SDK's style: a JSON-RPC error naming the setting, and when to retry. */
function expectRefusal(answer: McpHttpAnswer & { sessionId?: string }, status: number, setting: string): void {
  expect(answer.status).toBe(status);
  expect(answer.headers.get('retry-after')).toBe('1');
  expect(answer.sessionId).toBeUndefined();
  expect(answer.json()).toEqual({ jsonrpc: '2.0', id: 1, error: { code: -32000, message: expect.stringContaining(`(${setting})`) } });
}

describe('caps on MCP Streamable HTTP sessions, one instance', () => {
  let gateway: RunningGateway;

  beforeAll(async () => {
    gateway = await startGateway({ AUTH_TOKENS: 'alice,bob', MCP_HTTP_MAX_SESSIONS: 3, MCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL: 2 });
  });
  afterAll(() => gateway.close());

  it('answers 429 past MCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL and 503 past MCP_HTTP_MAX_SESSIONS; DELETE frees a place', async () => {
    const [first, second] = [await initializeOn(gateway, 'alice'), await initializeOn(gateway, 'alice')];
    expect([first.status, second.status]).toEqual([200, 200]);
    expectRefusal(await initializeOn(gateway, 'alice'), 429, 'MCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL');

    expect((await initializeOn(gateway, 'bob')).status).toBe(200);
    expectRefusal(await initializeOn(gateway, 'bob'), 503, 'MCP_HTTP_MAX_SESSIONS');
    expect(sessionsOf(gateway).size).toBe(3);

    expect((await deleteOn(gateway, 'alice', first.sessionId!)).status).toBe(200);
    expect(sessionsOf(gateway).size).toBe(2);
    const again = await initializeOn(gateway, 'alice');
    expect(again.status).toBe(200);
    expect((await mcpHttp(gateway, { body: TOOLS_LIST, headers: { ...bearer('alice'), ...inSession(again.sessionId!) } })).status).toBe(200);
  });
});

describe('an expired MCP Streamable HTTP session, one instance', () => {
  it('frees its place', async () => {
    const gateway = await startGateway({ AUTH_TOKENS: 'alice', MCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL: 1, CLOUD_SESSION_TIMEOUT: 0.5 });
    try {
      expect((await initializeOn(gateway, 'alice')).status).toBe(200);
      expectRefusal(await initializeOn(gateway, 'alice'), 429, 'MCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL');
      await until(() => sessionsOf(gateway).size === 0, 5000, 'the session to expire');
      expect((await initializeOn(gateway, 'alice')).status).toBe(200);
    } finally {
      await gateway.close();
    }
  });
});

describe('MCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL=0', () => {
  it('sets no limit per token', async () => {
    const gateway = await startGateway({ AUTH_TOKENS: 'alice', MCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL: 0, MCP_HTTP_MAX_SESSIONS: 5 });
    try {
      const answers = [];
      for (let i = 0; i < 5; i += 1) answers.push((await initializeOn(gateway, 'alice')).status);
      expect(answers).toEqual([200, 200, 200, 200, 200]);
      expectRefusal(await initializeOn(gateway, 'alice'), 503, 'MCP_HTTP_MAX_SESSIONS');
    } finally {
      await gateway.close();
    }
  });
});

describe('caps on MCP Streamable HTTP sessions, two instances sharing Redis', () => {
  const prefix = uniquePrefix();
  let redis: Redis;

  beforeAll(async () => {
    redis = await inspector();
  });
  afterAll(async () => {
    await removeKeys(redis, prefix);
    redis.disconnect();
  });

  const settings = (more: EnvironmentInput): EnvironmentInput => ({ REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: prefix, AUTH_TOKENS: 'alice,bob', ...more });

  it("counts a token's sessions on every instance; DELETE on either frees a place", async () => {
    const [a, b] = await Promise.all([
      startGateway(settings({ MCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL: 2 })),
      startGateway(settings({ MCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL: 2 })),
    ]);
    try {
      const onA = await initializeOn(a, 'alice');
      expect(onA.status).toBe(200);
      expect((await initializeOn(b, 'alice')).status).toBe(200);
      expectRefusal(await initializeOn(a, 'alice'), 429, 'MCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL');
      expectRefusal(await initializeOn(b, 'alice'), 429, 'MCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL');
      expect((await initializeOn(b, 'bob')).status).toBe(200);

      expect((await deleteOn(b, 'alice', onA.sessionId!)).status).toBe(200);
      expect((await initializeOn(a, 'alice')).status).toBe(200);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it("frees an expired session's place on every instance", async () => {
    const short = settings({ MCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL: 1, CLOUD_SESSION_TIMEOUT: 0.5, AUTH_TOKENS: 'carol' });
    const [a, b] = await Promise.all([startGateway(short), startGateway(short)]);
    try {
      expect((await initializeOn(a, 'carol')).status).toBe(200);
      expectRefusal(await initializeOn(b, 'carol'), 429, 'MCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL');
      let status = 0;
      await until(async () => (status = (await initializeOn(b, 'carol')).status) === 200, 5000, 'the session to expire');
      expect(status).toBe(200);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('answers 503 rather than take over a session on an instance already full', async () => {
    const [a, b] = await Promise.all([startGateway(settings({ MCP_HTTP_MAX_SESSIONS: 1 })), startGateway(settings({ MCP_HTTP_MAX_SESSIONS: 1 }))]);
    try {
      const onA = await initializeOn(a, 'alice');
      expect((await initializeOn(b, 'bob')).status).toBe(200);
      const takeOver = await mcpHttp(b, { body: TOOLS_LIST, headers: { ...bearer('alice'), ...inSession(onA.sessionId!) } });
      expect(takeOver.status).toBe(503);
      expect(takeOver.json()).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32000, message: expect.stringContaining('(MCP_HTTP_MAX_SESSIONS)') } });
      expect((await mcpHttp(a, { body: TOOLS_LIST, headers: { ...bearer('alice'), ...inSession(onA.sessionId!) } })).status).toBe(200);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
