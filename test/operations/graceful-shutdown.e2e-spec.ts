import type Redis from 'ioredis';
import { listeningPort, startMain } from '../support/main-process';
import { inspector, removeKeys, TEST_REDIS_URL, uniquePrefix } from '../support/redis';
import { ScriptedLlm } from '../support/scripted-llm';
import { TestSocket, UpgradeRefused } from '../support/test-socket';

async function connected(port: number): Promise<{ socket: TestSocket; sessionId: string }> {
  const socket = await TestSocket.open(`ws://127.0.0.1:${port}/`);
  const greeting = await socket.next();
  return { socket, sessionId: greeting.data.session_id };
}

async function readUntil(socket: TestSocket, type: string): Promise<any[]> {
  const frames: any[] = [];
  for (;;) {
    const frame = await socket.next(10000);
    frames.push(frame);
    if (frame.type === type) return frames;
  }
}

describe('graceful shutdown with Redis sessions', () => {
  const prefix = uniquePrefix();
  let llm: ScriptedLlm;
  let redis: Redis;

  beforeAll(async () => {
    llm = await ScriptedLlm.start();
    redis = await inspector();
  });
  afterAll(async () => {
    await llm.close();
    await removeKeys(redis, prefix);
    redis.disconnect();
  });

  it('lets the turn in flight finish, closes every socket with 1001, exits 0, and the conversation survives the restart', async () => {
    const env = {
      LLM_BASE_URL: llm.baseUrl,
      LLM_MAX_RETRIES: '0',
      REDIS_URL: TEST_REDIS_URL,
      REDIS_KEY_PREFIX: prefix,
      SHUTDOWN_DRAIN_TIMEOUT: '10',
      CLOUD_LOG_LEVEL: 'INFO',
    };
    const main = startMain(env);
    const port = await listeningPort(main.output);

    const busy = await connected(port);
    const idle = await connected(port);
    busy.socket.send({ type: 'configure', enable_context: true });
    llm.reply({ text: 'the answer that was in flight', delayMs: 1500 });
    busy.socket.send({ type: 'text_input', text: 'a question just before the restart' });
    expect(await busy.socket.next()).toMatchObject({ type: 'status', status: 'processing' });

    main.child.kill('SIGTERM');
    expect(await idle.socket.closed).toEqual({ code: 1001, reason: 'Server shutting down' });

    const refusal = await TestSocket.open(`ws://127.0.0.1:${port}/`).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(UpgradeRefused);
    expect((refusal as UpgradeRefused).status).toBe(503);
    const health = await fetch(`http://127.0.0.1:${port}/health`);
    expect(health.status).toBe(503);
    expect(await health.json()).toMatchObject({ status: 'shutting_down', error: { accepting: { status: 'down', message: 'Shutting down' } } });

    const frames = await readUntil(busy.socket, 'llm_response');
    expect(frames.pop().content).toBe('the answer that was in flight');
    expect(await busy.socket.closed).toEqual({ code: 1001, reason: 'Server shutting down' });
    expect(await main.exited).toBe(0);
    expect(main.output()).toMatch(/Work in flight finished/);

    const restarted = startMain(env);
    try {
      const again = await connected(await listeningPort(restarted.output));
      again.socket.send({ type: 'start_session', session_id: busy.sessionId });
      expect(await again.socket.next()).toMatchObject({ status: 'connected', data: { session_id: busy.sessionId } });
      llm.reset();
      again.socket.send({ type: 'text_input', text: 'and after it?' });
      await readUntil(again.socket, 'llm_response');
      expect(llm.requests[0].messages.slice(1).map((m) => m.content)).toEqual([
        'a question just before the restart',
        'the answer that was in flight',
        'and after it?',
      ]);
      await again.socket.close();
    } finally {
      restarted.child.kill('SIGTERM');
      expect(await restarted.exited).toBe(0);
    }
  }, 60000);
});
