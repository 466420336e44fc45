import type Redis from 'ioredis';
import { LlmClient, LlmStack, startLlmStack } from '../support/llm-stack';
import { inspector, removeKeys, TEST_REDIS_URL, uniquePrefix } from '../support/redis';
import { ChatRequest } from '../support/scripted-llm';
import { TcpProxy } from '../support/tcp-proxy';

/** The conversation a request carried, without its system message. */
const dialogue = (request: ChatRequest) => request.messages.slice(1).map((m) => `${m.role}:${m.content}`);

async function say(client: LlmClient, text: string): Promise<any> {
  client.send({ type: 'text_input', text });
  const frames = await client.until('status', 'idle');
  return frames.find((frame) => frame.type === 'llm_response') ?? frames.find((frame) => frame.type === 'error');
}

async function resume(client: LlmClient, sessionId: string): Promise<any> {
  client.send({ type: 'start_session', session_id: sessionId });
  const frame = await client.next();
  return frame;
}

describe('many instances sharing Redis', () => {
  const prefix = uniquePrefix();
  const shared = { REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: prefix, AUTH_TOKENS: 'alice,bob' };
  let redis: Redis;

  beforeAll(async () => {
    redis = await inspector();
  });
  afterAll(async () => {
    await removeKeys(redis, prefix);
    redis.disconnect();
  });

  const alice = (stack: LlmStack) => stack.connect('/', { Authorization: 'Bearer alice' });

  it('continues a conversation started on one instance on another, with its history and settings', async () => {
    const [a, b] = await Promise.all([startLlmStack(shared), startLlmStack(shared)]);
    try {
      const onA = await alice(a);
      onA.send({ type: 'configure', enable_context: true, language: 'fr' });
      expect((await say(onA, "Je m'appelle Marie")).content).toBe("You said: Je m'appelle Marie");

      const onB = await alice(b);
      expect(await resume(onB, onA.sessionId)).toMatchObject({ status: 'connected', data: { session_id: onA.sessionId } });
      await say(onB, "Comment je m'appelle ?");
      const [request] = b.llm.requests;
      expect(dialogue(request)).toEqual(["user:Je m'appelle Marie", "assistant:You said: Je m'appelle Marie", "user:Comment je m'appelle ?"]);
      expect(request.messages[0].content).toContain('Always answer in French');

      const notice = await onA.next();
      expect(notice).toMatchObject({ status: 'connected', data: { previous_session_id: onA.sessionId, reason: 'session_resumed_elsewhere' } });

      const bob = await b.connect('/', { Authorization: 'Bearer bob' });
      expect(await resume(bob, onA.sessionId)).toMatchObject({ type: 'error', code: 'SESSION_ERROR' });
      await Promise.all([onA.close(), onB.close(), bob.close()]);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('resumes on a second instance when the first goes away mid-conversation', async () => {
    const [a, b] = await Promise.all([startLlmStack(shared), startLlmStack(shared)]);
    try {
      const device = await alice(a);
      device.send({ type: 'configure', enable_context: true });
      await say(device, 'first question');
      const sessionId = device.sessionId;
      await a.close();
      expect((await device.closed).code).toBe(1001);

      const reconnected = await alice(b);
      await resume(reconnected, sessionId);
      await say(reconnected, 'second question');
      expect(dialogue(b.llm.requests[0])).toEqual(['user:first question', 'assistant:You said: first question', 'user:second question']);
      await reconnected.close();
    } finally {
      await b.close();
    }
  });

  it('keeps every conversation when all instances restart', async () => {
    const first = await startLlmStack(shared);
    const device = await alice(first);
    device.send({ type: 'configure', enable_context: true, temperature: 0.25 });
    await say(device, 'remember 42');
    const sessionId = device.sessionId;
    await first.close();

    const restarted = await startLlmStack(shared);
    try {
      const back = await alice(restarted);
      expect(await resume(back, sessionId)).toMatchObject({ status: 'connected' });
      await say(back, 'what number?');
      const [request] = restarted.llm.requests;
      expect(dialogue(request)).toEqual(['user:remember 42', 'assistant:You said: remember 42', 'user:what number?']);
      expect(request.temperature).toBe(0.25);
      await back.close();
    } finally {
      await restarted.close();
    }
  });
});

describe('losing Redis while running', () => {
  const prefix = uniquePrefix();

  it('answers SESSION_ERROR and not ready while Redis is away, and recovers by itself', async () => {
    const [host, port] = new URL(TEST_REDIS_URL).host.split(':');
    const proxy = await TcpProxy.start(host, Number(port || 6379));
    const stack = await startLlmStack({ REDIS_URL: `redis://127.0.0.1:${proxy.port}`, REDIS_KEY_PREFIX: prefix });
    const redis = await inspector();
    try {
      const client = await stack.connect();
      expect((await say(client, 'before')).content).toBe('You said: before');

      proxy.interrupt();
      const failed = await say(client, 'during');
      expect(failed).toMatchObject({ type: 'error', code: 'SESSION_ERROR', message: 'Session store unavailable' });
      const health = await fetch(stack.gateway.http('/health'));
      expect(health.status).toBe(503);
      expect(((await health.json()) as any).error.sessions).toMatchObject({ status: 'down', store: 'RedisSessionStore' });

      proxy.restore();
      const deadline = Date.now() + 15000;
      while ((await fetch(stack.gateway.http('/health'))).status !== 200) {
        if (Date.now() > deadline) throw new Error('Redis connection did not come back');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect((await say(client, 'after')).content).toBe('You said: after');
      await client.close();
    } finally {
      await stack.close();
      await proxy.close();
      await removeKeys(redis, prefix);
      redis.disconnect();
    }
  });

  it('refuses to start when Redis cannot be reached, naming REDIS_URL', async () => {
    await expect(startLlmStack({ REDIS_URL: 'redis://127.0.0.1:1' })).rejects.toThrow(
      'Cannot reach Redis at redis://127.0.0.1:1 (REDIS_URL): connect ECONNREFUSED 127.0.0.1:1',
    );
  });
});
