import Redis from 'ioredis';
import { RedisSessionStore } from '../../src/assistant/session/redis-session.store';
import type { Session } from '../../src/assistant/session/session';
import { LlmClient, LlmStack, startLlmStack } from '../support/llm-stack';
import { RedisServer } from '../support/redis-server';
import { ChatRequest } from '../support/scripted-llm';
import { until } from '../support/upstreams';
import { RedisConnections } from '../../src/core/state/shared-redis';

/** The conversation a request carried, without its system message. */
const dialogue = (request: ChatRequest) => request.messages.slice(1).map((m) => `${m.role}:${m.content}`);

async function say(client: LlmClient, text: string): Promise<any[]> {
  client.send({ type: 'text_input', text });
  return client.until('status', 'idle');
}

async function get(stack: LlmStack, path: string): Promise<{ status: number; body: any }> {
  const response = await fetch(stack.gateway.http(path));
  return { status: response.status, body: await response.json() };
}

/**
 * Redis misbehaving under a running gateway, on a redis-server of the test's own: frozen
 * (SIGSTOP: its sockets stay open and nothing is answered), and restarted without its data.
 */
describe('a Redis that freezes or loses its data', () => {
  const prefix = 'vtg-faults:';
  let server: RedisServer;
  let stack: LlmStack;

  beforeEach(async () => {
    server = await RedisServer.start();
    stack = await startLlmStack({ REDIS_URL: server.url, REDIS_KEY_PREFIX: prefix });
  });
  afterEach(async () => {
    server.thaw();
    await stack?.close();
    await server.stop();
  });

  it('makes the instance unready within seconds of freezing, and ready again when it thaws', async () => {
    expect((await get(stack, '/health/ready')).body.info.redis).toMatchObject({ status: 'up' });
    server.freeze();
    let unready: any;
    await until(
      async () => {
        unready = await get(stack, '/health/ready');
        return unready.status === 503;
      },
      6_000,
      '/health/ready to answer 503',
    );
    expect(unready.body.error.redis).toEqual({ status: 'down', message: 'Redis did not answer within 1 s (REDIS_URL)' });
    const health = await get(stack, '/health');
    expect(health.status).toBe(503);
    expect(health.body.error.sessions).toEqual({ status: 'down', store: 'RedisSessionStore', message: 'Redis did not answer within 1 s (REDIS_URL)' });
    expect((await get(stack, '/health/live')).status).toBe(200);

    server.thaw();
    await until(async () => (await get(stack, '/health/ready')).status === 200, 6_000, '/health/ready to answer 200 again');
    expect((await get(stack, '/health')).status).toBe(200);
  });

  it('delivers an answer whose history write failed, says so, and never lets that write land when Redis wakes', async () => {
    const client = await stack.connect();
    client.send({ type: 'configure', enable_context: true });
    // Redis freezes while the model answers: the session was read, the history write is to come.
    stack.llm.reply(() => {
      server.freeze();
      return { text: 'Forty-two.' };
    });
    const frames = await say(client, 'What is the answer?');
    expect(frames.filter((frame) => frame.type === 'error')).toEqual([]);
    expect(frames.find((frame) => frame.type === 'llm_response')).toMatchObject({ content: 'Forty-two.', is_final: true, history_saved: false });

    server.thaw();
    // This turn's commands go on the same connection, so Redis runs them after the late write.
    const next = (await say(client, 'And now?')).find((frame) => frame.type === 'llm_response');
    expect(next.content).toBe('You said: And now?');
    expect(next).not.toHaveProperty('history_saved');
    expect(dialogue(stack.llm.requests[1])).toEqual(['user:And now?']);
    const redis = new Redis(server.url);
    try {
      const stored = await redis.lrange(`${prefix}session:{${client.sessionId}}:history`, 0, -1);
      expect(stored.map((text) => JSON.parse(text).content)).toEqual(['And now?', 'You said: And now?']);
    } finally {
      redis.disconnect();
    }
    await client.close();
  });

  it('gives open connections new sessions, announced, once Redis restarted without their sessions', async () => {
    const talking = await stack.connect();
    const configuring = await stack.connect();
    expect((await say(talking, 'before')).find((frame) => frame.type === 'llm_response').content).toBe('You said: before');

    await server.restartEmpty();
    await until(async () => (await get(stack, '/health/ready')).status === 200, 15_000, 'the gateway to reconnect to Redis');

    const frames = await say(talking, 'after');
    const notice = frames.find((frame) => frame.type === 'status' && frame.status === 'connected');
    expect(notice.data).toEqual({ session_id: expect.any(String), previous_session_id: talking.sessionId, reason: 'session_lost' });
    expect(notice.data.session_id).not.toBe(talking.sessionId);
    expect(frames.find((frame) => frame.type === 'llm_response').content).toBe('You said: after');
    const again = await say(talking, 'still there?');
    expect(again.filter((frame) => frame.type === 'status' && frame.status === 'connected')).toEqual([]);
    expect(again.find((frame) => frame.type === 'status' && frame.status === 'idle').data.session_id).toBe(notice.data.session_id);

    configuring.send({ type: 'configure', language: 'fr' });
    expect(await configuring.next()).toMatchObject({
      type: 'status',
      status: 'connected',
      data: { previous_session_id: configuring.sessionId, reason: 'session_lost' },
    });
    await say(configuring, 'Bonjour');
    expect(stack.llm.requests.at(-1)!.messages[0].content).toContain('Always answer in French');
    await Promise.all([talking.close(), configuring.close()]);
  });
});

/** Calls per command since the last `CONFIG RESETSTAT`, from `INFO commandstats` (commands run by scripts included). */
async function commandCalls(redis: Redis): Promise<Record<string, number>> {
  const calls: Record<string, number> = {};
  for (const [, command, count] of (await redis.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls[command] = Number(count);
  return calls;
}

describe("RedisSessionStore at a token's session cap", () => {
  let server: RedisServer;
  let store: RedisSessionStore;
  let redis: Redis;

  beforeAll(async () => {
    server = await RedisServer.start();
    store = await RedisSessionStore.connect(new RedisConnections(server.url, 'cap:'), 60_000);
    redis = new Redis(server.url);
  });
  afterAll(async () => {
    await store.onApplicationShutdown();
    redis.disconnect();
    await server.stop();
  });

  it('forgets the least recently active session with a few commands, however many sessions the token keeps', async () => {
    const keep = 300;
    const at = (id: string, time: number): Session => ({
      id,
      owner: 'capped',
      createdAt: time,
      lastActiveAt: time,
      settings: { temperature: 0.7, maxTokens: 2048, enableContext: false },
      history: [],
    });
    for (let i = 0; i < keep; i += 1) await store.create(at(`old-${i}`, 1000 + i));
    await store.touch({ id: 'old-0', owner: 'capped' });
    await redis.config('RESETSTAT');
    const connects = 50;
    for (let i = 0; i < connects; i += 1) {
      await store.create(at(`new-${i}`, Date.now()));
      expect(await store.trimOwner('capped', keep)).toBe(1);
    }
    const calls = await commandCalls(redis);
    delete calls.info;
    const perConnect = Object.values(calls).reduce((sum, count) => sum + count, 0) / connects;
    expect(calls.hget ?? 0).toBe(0);
    expect(perConnect).toBeLessThan(40);
    expect(await redis.zcard('cap:sessions-of:capped')).toBe(keep);
    const survivors = await Promise.all(['old-0', 'old-1', 'old-50', 'old-51', 'new-0'].map(async (id) => (await store.get(id)) !== undefined));
    expect(survivors).toEqual([true, false, false, true, true]);
  });
});
