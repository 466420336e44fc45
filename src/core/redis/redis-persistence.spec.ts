import { Logger } from '@nestjs/common';
import { ReplyError } from 'ioredis';
import { EventEmitter } from 'events';
import { readRedisPersistence } from './redis-persistence';
import { RedisPersistenceWatch } from './redis-persistence-watch';

/** What a Redis answers to CONFIG GET and INFO: a value, or a refusal (an error reply). */
interface Answers {
  config?: Record<string, string> | 'refused';
  info?: string | 'refused';
}

const refused = (command: string) => new ReplyError(`ERR unknown command '${command}', with args beginning with:`);

/** A Redis that answers CONFIG GET and INFO persistence as `answers` says, and whose answers can change. */
class FakeRedis extends EventEmitter {
  unreachable = false;
  readonly quit = jest.fn(async () => 'OK');
  readonly disconnect = jest.fn();
  readonly config = jest.fn(async (_get: string, name: string): Promise<string[]> => {
    if (this.unreachable) throw new Error("Stream isn't writeable and enableOfflineQueue options is false");
    if (this.answers.config === 'refused' || this.answers.config === undefined) throw refused('config');
    const value = this.answers.config[name];
    return value === undefined ? [] : [name, value];
  });
  readonly info = jest.fn(async (): Promise<string> => {
    if (this.unreachable) throw new Error('Connection is closed.');
    if (this.answers.info === 'refused' || this.answers.info === undefined) throw refused('info');
    return this.answers.info;
  });

  constructor(public answers: Answers) {
    super();
  }
}

const fakeRedis = (answers: Answers) => new FakeRedis(answers);

const INFO_AOF_ON = '# Persistence\r\nloading:0\r\nrdb_changes_since_last_save:0\r\naof_enabled:1\r\naof_rewrite_in_progress:0\r\n';
const INFO_AOF_OFF = '# Persistence\r\nloading:0\r\nrdb_changes_since_last_save:321\r\naof_enabled:0\r\n';

describe('readRedisPersistence', () => {
  it('reads the append-only file and snapshots from CONFIG', async () => {
    expect(await readRedisPersistence(fakeRedis({ config: { appendonly: 'yes', save: '' } }) as never)).toEqual({
      persistent: true,
      detail: 'appendonly yes, save ""',
    });
    expect(await readRedisPersistence(fakeRedis({ config: { appendonly: 'no', save: '3600 1 300 100 60 10000' } }) as never)).toEqual({
      persistent: true,
      detail: 'appendonly no, save "3600 1 300 100 60 10000"',
    });
    expect(await readRedisPersistence(fakeRedis({ config: { appendonly: 'no', save: '' } }) as never)).toEqual({
      persistent: false,
      detail: 'appendonly no, save ""',
    });
  });

  it('falls back to INFO persistence where CONFIG is refused, and says the AOF is on', async () => {
    const redis = fakeRedis({ config: 'refused', info: INFO_AOF_ON });
    expect(await readRedisPersistence(redis as never)).toEqual({ persistent: true, detail: 'aof_enabled:1 (INFO persistence; CONFIG refused)' });
    expect(redis.info).toHaveBeenCalledWith('persistence');
  });

  it('does not call a Redis without AOF unpersisted when CONFIG is refused: snapshots may be on', async () => {
    const { persistent } = await readRedisPersistence(fakeRedis({ config: 'refused', info: INFO_AOF_OFF }) as never);
    expect(persistent).toBeUndefined();
  });

  it('falls back too when CONFIG answers nothing for the names (a proxy that filters it)', async () => {
    expect((await readRedisPersistence(fakeRedis({ config: {}, info: INFO_AOF_ON }) as never)).persistent).toBe(true);
  });

  it('does not know when Redis refuses both, or answers INFO without the field', async () => {
    expect(await readRedisPersistence(fakeRedis({ config: 'refused', info: 'refused' }) as never)).toEqual({
      persistent: undefined,
      detail: 'Redis refuses both CONFIG GET and INFO',
    });
    expect((await readRedisPersistence(fakeRedis({ config: 'refused', info: '# Persistence\r\nloading:0\r\n' }) as never)).persistent).toBeUndefined();
  });

  it('rejects when Redis does not answer at all, which is no answer about persistence', async () => {
    const redis = fakeRedis({ config: { appendonly: 'no', save: '' } });
    redis.unreachable = true;
    await expect(readRedisPersistence(redis as never)).rejects.toThrow("Stream isn't writeable");
  });
});

describe('RedisPersistenceWatch', () => {
  let warn: jest.SpyInstance;
  let log: jest.SpyInstance;

  beforeEach(() => {
    warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    log = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
  });
  afterEach(() => jest.restoreAllMocks());

  const watch = (redis: FakeRedis) => RedisPersistenceWatch.over(redis as never, 'redis://:secret@redis.internal:6379', 60_000);

  it('warns once at start when Redis keeps nothing across a restart, without its password', async () => {
    const watched = await watch(fakeRedis({ config: { appendonly: 'no', save: '' } }));
    expect(watched.persistent).toBe(false);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0][0]).toMatch(/^Redis at redis:\/\/:\*+@redis\.internal:6379 has no persistence \(appendonly no, save ""\): .*reminder/);
    expect(warn.mock.calls[0][0]).not.toContain('secret');
    await watched.check();
    expect(warn).toHaveBeenCalledTimes(1);
    await watched.onApplicationShutdown();
  });

  it('does not warn of a persistent Redis, nor of one that will not say', async () => {
    const persistent = await watch(fakeRedis({ config: { appendonly: 'yes', save: '' } }));
    expect(persistent.persistent).toBe(true);
    const silent = await watch(fakeRedis({ config: 'refused', info: 'refused' }));
    expect(silent.persistent).toBeUndefined();
    expect(warn).not.toHaveBeenCalled();
    expect(log.mock.calls.map(([message]) => message)).toEqual([
      expect.stringContaining('persists what it holds (appendonly yes, save "")'),
      expect.stringContaining('does not say whether it persists what it holds (Redis refuses both CONFIG GET and INFO)'),
    ]);
    await Promise.all([persistent.onApplicationShutdown(), silent.onApplicationShutdown()]);
  });

  it('reads again when the connection comes back, and warns when persistence went away', async () => {
    const redis = fakeRedis({ config: { appendonly: 'yes', save: '' } });
    const watched = await watch(redis);
    redis.answers = { config: { appendonly: 'no', save: '' } };
    redis.emit('ready');
    await new Promise((resolve) => setImmediate(resolve));
    expect(watched.persistent).toBe(false);
    expect(warn).toHaveBeenCalledTimes(1);
    await watched.onApplicationShutdown();
  });

  it('keeps its last answer while Redis does not answer', async () => {
    const redis = fakeRedis({ config: { appendonly: 'no', save: '' } });
    const watched = await watch(redis);
    redis.unreachable = true;
    await watched.check();
    expect(watched.persistent).toBe(false);
    await watched.onApplicationShutdown();
    expect(redis.quit).toHaveBeenCalled();
  });
});
