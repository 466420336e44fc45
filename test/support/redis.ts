import { randomUUID } from 'crypto';
import Redis from 'ioredis';

/** The Redis the tests use (see redis-global-setup.ts). */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A key prefix of this test run's own, so runs sharing one Redis never see each other's keys. */
export function uniquePrefix(): string {
  return `vtg-test:${randomUUID().slice(0, 8)}:`;
}

/** A plain client for looking at keys and removing a test run's keys afterwards. */
export async function inspector(): Promise<Redis> {
  const redis = new Redis(TEST_REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
  } catch (error) {
    throw new Error(`The Redis tests need a Redis at ${TEST_REDIS_URL} (set REDIS_URL): ${(error as Error).message}`);
  }
  return redis;
}

/** Deletes every key under `prefix`. */
export async function removeKeys(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
    if (keys.length > 0) await redis.del(...keys);
    cursor = next;
  } while (cursor !== '0');
}
