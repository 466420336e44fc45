import { ChildProcess, spawn } from 'child_process';
import { freePort } from './ports';
import { answersPing } from './redis-server';

declare global {
  var privateRedis: ChildProcess | undefined;
}

/**
 * Gives the Redis tests a Redis, as TEST_REDIS_URL: REDIS_URL when set, else the machine's own
 * on 127.0.0.1:6379, else a private `redis-server` started for this run (without persistence)
 * and stopped after it. Workers start after this runs, so they inherit TEST_REDIS_URL; it is not
 * REDIS_URL, so gateways that tests start use Redis only when a test asks for it.
 */
export default async function setUpRedis(): Promise<void> {
  if (process.env.TEST_REDIS_URL) return;
  if (process.env.REDIS_URL) {
    process.env.TEST_REDIS_URL = process.env.REDIS_URL;
    return;
  }
  if (await answersPing(6379)) {
    process.env.TEST_REDIS_URL = 'redis://127.0.0.1:6379';
    return;
  }
  const port = await freePort();
  const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const started = await new Promise<boolean>((resolve) => {
    server.once('error', () => resolve(false));
    const deadline = Date.now() + 5000;
    const poll = async () => {
      if (await answersPing(port)) return resolve(true);
      if (Date.now() > deadline) return resolve(false);
      setTimeout(poll, 50);
    };
    void poll();
  });
  if (!started) {
    server.kill();
    throw new Error('The Redis tests need Redis: set REDIS_URL, run one on 127.0.0.1:6379, or install redis-server');
  }
  globalThis.privateRedis = server;
  process.env.TEST_REDIS_URL = `redis://127.0.0.1:${port}`;
}
