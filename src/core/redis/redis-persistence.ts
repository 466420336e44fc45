import type Redis from 'ioredis';
import { ReplyError } from 'ioredis';

/** Whether what the gateway keeps in a Redis outlives a restart of that Redis, as Redis tells it. */
export interface RedisPersistence {
  /** True with the append-only file or RDB snapshots on, false with neither, undefined when Redis would not say. */
  persistent: boolean | undefined;
  /** What Redis answered, in its own words, for the log: `appendonly no, save ""`. */
  detail: string;
}

/**
 * Reads a Redis's persistence: `CONFIG GET appendonly` and `CONFIG GET save`; where CONFIG is
 * refused (renamed or disabled, as managed Redis services do, or not granted by ACL), `INFO
 * persistence`, which tells whether the append-only file is on but not whether snapshots are
 * configured: without AOF the answer is then undefined, never a false alarm. Rejects only when
 * Redis cannot be reached (no answer at all).
 */
export async function readRedisPersistence(redis: Pick<Redis, 'config' | 'info'>): Promise<RedisPersistence> {
  try {
    const [, appendonly] = (await redis.config('GET', 'appendonly')) as string[];
    const [, save] = (await redis.config('GET', 'save')) as string[];
    if (appendonly !== undefined && save !== undefined) {
      return { persistent: appendonly === 'yes' || save.trim() !== '', detail: `appendonly ${appendonly}, save "${save}"` };
    }
  } catch (error) {
    if (!(error instanceof ReplyError)) throw error;
  }
  try {
    const aof = /^aof_enabled:(\d)/m.exec(await redis.info('persistence'))?.[1];
    if (aof === '1') return { persistent: true, detail: 'aof_enabled:1 (INFO persistence; CONFIG refused)' };
    if (aof === '0') return { persistent: undefined, detail: 'aof_enabled:0 (INFO persistence); whether snapshots are on is unknown, CONFIG refused' };
    return { persistent: undefined, detail: 'INFO persistence does not tell, and CONFIG is refused' };
  } catch (error) {
    if (!(error instanceof ReplyError)) throw error;
    return { persistent: undefined, detail: 'Redis refuses both CONFIG GET and INFO' };
  }
}
