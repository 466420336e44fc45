import { Logger, OnApplicationShutdown, OnModuleDestroy } from '@nestjs/common';
import { Job, Queue, Worker } from 'bullmq';
import type Redis from 'ioredis';
import type { RedisOptions } from 'ioredis';
import { COMMAND_TIMEOUT_MS } from '../../core/redis/redis-connection';
import type { SharedRedis } from '../../core/state/shared-redis';
import { RedisOutageLog } from '../../core/redis/redis-outage-log';
import type { DeliverReminder, Reminder, ReminderScheduler, RemindersOptions } from './reminder';
import { ReminderLimitError } from './reminder';

/** The BullMQ queue of reminders (under {@link bullPrefixOf}). */
export const REMINDER_QUEUE = 'reminders';

/** BullMQ's key prefix, under the gateway's: `vtg:` gives `vtg:bull:reminders:...`. */
export const bullPrefixOf = (keyPrefix: string): string => `${keyPrefix}bull`;

/** How long a reminder is kept past its due time when nothing fired it (every instance down): then forgotten. */
const RETENTION_MS = 7 * 24 * 3600 * 1000;

/** How long the idempotency key of a fired reminder lives: longer than any retry of its job. */
const FIRED_TTL_MS = 24 * 3600 * 1000;

/** What a BullMQ job carries: the keys of its reminder (the reminder itself lives in our own keys). */
interface ReminderJobData {
  id: string;
  deviceId: string;
  owner: string;
}

/** How the worker runs; the defaults suit production, tests shorten them. */
export interface RedisReminderTuning {
  /** How long a worker's hold on a job lasts without renewal; a job of a killed worker is taken over after about this plus {@link stalledIntervalMs}. */
  lockDurationMs: number;
  /** How often each worker looks for jobs of dead workers. */
  stalledIntervalMs: number;
  /** Reminders one instance speaks at once. */
  concurrency: number;
  /** How long shutdown waits for reminders being spoken before abandoning them. */
  shutdownWaitMs: number;
}

export const DEFAULT_REDIS_REMINDER_TUNING: Readonly<RedisReminderTuning> = Object.freeze({
  lockDurationMs: 30_000,
  stalledIntervalMs: 30_000,
  concurrency: 8,
  shutdownWaitMs: 5_000,
});

/** The key of a principal's reminders; the anonymous principal (auth off) is one principal too. */
const ownerKey = (principal: string | undefined): string => (principal === undefined ? '-' : `p:${principal}`);

/**
 * Every write is one Lua script, atomic. KEYS of each: the reminder's record (JSON), its
 * device's index and its owner's index (sorted sets of ids scored by due time).
 */
const SCRIPTS = {
  /**
   * ARGV: id, record JSON, due at, record TTL ms, max per device, max per owner, stale before.
   * 1 stored; 0 the id exists; -1 the device is full; -2 the owner is. Index entries long past
   * due (their reminder forgotten) are dropped first, so they never count.
   */
  addReminder: {
    keys: 3,
    lua: `
      redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[7])
      redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. ARGV[7])
      if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5]) then return -1 end
      if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[6]) then return -2 end
      if not redis.call('SET', KEYS[1], ARGV[2], 'NX', 'PX', ARGV[4]) then return 0 end
      redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
      redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
      return 1`,
  },
  /** ARGV: id. 1 when a pending reminder was removed, 0 when there was none. */
  removeReminder: {
    keys: 3,
    lua: `
      redis.call('ZREM', KEYS[2], ARGV[1])
      redis.call('ZREM', KEYS[3], ARGV[1])
      return redis.call('DEL', KEYS[1])`,
  },
  /**
   * Takes a due reminder for speaking, once: KEYS[4] is its idempotency key. ARGV: id, fired TTL ms.
   * The record, or nil when it is gone (cancelled, or taken already by an earlier run of its job).
   */
  claimReminder: {
    keys: 4,
    lua: `
      local record = redis.call('GET', KEYS[1])
      if not record then return false end
      if not redis.call('SET', KEYS[4], '1', 'NX', 'PX', ARGV[2]) then return false end
      redis.call('DEL', KEYS[1])
      redis.call('ZREM', KEYS[2], ARGV[1])
      redis.call('ZREM', KEYS[3], ARGV[1])
      return record`,
  },
} as const;

type ScriptName = keyof typeof SCRIPTS;
type ScriptedRedis = Redis & Record<ScriptName, (...args: (string | number)[]) => Promise<unknown>>;

/** Longest a forced close of the worker may take before its connections are cut. */
const FORCED_CLOSE_MS = 2000;

/**
 * Reminders in Redis, scheduled with BullMQ (`REDIS_URL`): shared by every instance, kept across
 * restarts. Each reminder is a record of its own (JSON, expiring a while after its due time),
 * indexed per device and per principal by due time (which count and list them), and a delayed
 * BullMQ job with the reminder's id as its job id. Every instance runs a worker: the one that
 * takes a due job speaks the reminder.
 *
 * Spoken once: a worker first claims the reminder in one script, which deletes its record and
 * sets its idempotency key (`<prefix>reminder-fired:<id>`, `SET NX`), and only then pushes. A job
 * whose worker died (SIGKILL, a lost replica) is taken over by another worker once its lock
 * expires (BullMQ's stalled-job check); if the dead worker had claimed the reminder, the new run
 * finds nothing to claim and ends, so a reminder is never spoken twice. A worker that dies
 * between its claim and the push loses that one reminder: at most once, never twice.
 */
export class RedisReminderScheduler implements ReminderScheduler, OnModuleDestroy, OnApplicationShutdown {
  private readonly logger = new Logger('Reminders');
  private readonly stopping = new AbortController();
  private worker: Worker<ReminderJobData> | undefined;
  private closing: Promise<void> | undefined;

  private constructor(
    private readonly redis: ScriptedRedis,
    private readonly queue: Queue<ReminderJobData>,
    private readonly prefix: string,
    private readonly options: Pick<RemindersOptions, 'maxPerDevice' | 'maxPerPrincipal'>,
    private readonly deliver: DeliverReminder,
    private readonly tuning: RedisReminderTuning,
    private readonly now: () => number,
  ) {}

  /** Connects (or fails with `RedisUnavailableError`) and starts this instance's worker. */
  static async connect(
    shared: SharedRedis,
    options: Pick<RemindersOptions, 'maxPerDevice' | 'maxPerPrincipal'>,
    deliver: DeliverReminder,
    tuning: Partial<RedisReminderTuning> = {},
    now: () => number = Date.now,
  ): Promise<RedisReminderScheduler> {
    const { url, keyPrefix } = shared;
    const [redis] = (await shared.connect(1, (client) => {
      for (const [name, { keys, lua }] of Object.entries(SCRIPTS)) client.defineCommand(name, { numberOfKeys: keys, lua });
    })) as ScriptedRedis[];
    redis.options.commandTimeout = COMMAND_TIMEOUT_MS;
    // The queue shares this connection (it only adds and removes jobs); the worker has its own two.
    const queue = new Queue<ReminderJobData>(REMINDER_QUEUE, {
      connection: redis,
      prefix: bullPrefixOf(keyPrefix),
      streams: { events: { maxLen: 100 } },
    });
    const scheduler = new RedisReminderScheduler(redis, queue, keyPrefix, options, deliver, { ...DEFAULT_REDIS_REMINDER_TUNING, ...tuning }, now);
    // BullMQ retries its connections every second or so and reports each failure.
    const outages = RedisOutageLog.of(url);
    queue.on('error', outages.failed);
    try {
      await queue.waitUntilReady();
    } catch (error) {
      await scheduler.close(true);
      throw error;
    }
    scheduler.startWorker(workerConnection(redis.options), outages.failed);
    return scheduler;
  }

  async schedule(reminder: Reminder): Promise<void> {
    if (this.closing) throw new Error('Reminders are shutting down');
    const keys = this.keysOf(reminder.id, reminder.deviceId, ownerKey(reminder.principal));
    const now = this.now();
    const stored = (await this.redis.addReminder(
      ...keys,
      reminder.id,
      JSON.stringify(reminder),
      reminder.dueAt,
      Math.max(0, reminder.dueAt - now) + RETENTION_MS,
      this.options.maxPerDevice,
      this.options.maxPerPrincipal,
      now - RETENTION_MS,
    )) as number;
    if (stored === -1) throw new ReminderLimitError('device', this.options.maxPerDevice);
    if (stored === -2) throw new ReminderLimitError('principal', this.options.maxPerPrincipal);
    if (stored === 0) throw new Error(`Reminder ${reminder.id} exists already`);
    try {
      await this.queue.add(
        'reminder',
        { id: reminder.id, deviceId: reminder.deviceId, owner: ownerKey(reminder.principal) },
        {
          jobId: reminder.id,
          delay: Math.max(0, reminder.dueAt - this.now()),
          // A run that failed before its claim (Redis away) is tried again; the claim keeps it to one push.
          attempts: 5,
          backoff: { type: 'exponential', delay: 1000 },
          removeOnComplete: true,
          removeOnFail: { age: RETENTION_MS / 1000, count: 1000 },
        },
      );
    } catch (error) {
      // Not scheduled: not stored either, so it is not listed nor counted.
      await this.redis.removeReminder(...keys, reminder.id).catch(() => undefined);
      throw error;
    }
  }

  async get(id: string): Promise<Reminder | undefined> {
    const record = await this.redis.get(this.recordKey(id));
    return record === null ? undefined : (JSON.parse(record) as Reminder);
  }

  async listForDevice(deviceId: string): Promise<Reminder[]> {
    const ids = await this.redis.zrangebyscore(this.deviceKey(deviceId), this.now() - RETENTION_MS, '+inf');
    if (ids.length === 0) return [];
    const records = await this.redis.mget(...ids.map((id) => this.recordKey(id)));
    return records.filter((record): record is string => record !== null).map((record) => JSON.parse(record) as Reminder);
  }

  async cancel(id: string): Promise<Reminder | undefined> {
    const reminder = await this.get(id);
    if (!reminder) return undefined;
    const removed = (await this.redis.removeReminder(...this.keysOf(id, reminder.deviceId, ownerKey(reminder.principal)), id)) as number;
    // Taken by a worker meanwhile: it is being spoken.
    if (removed === 0) return undefined;
    try {
      await this.queue.remove(id);
    } catch (error) {
      // The job finds no reminder when it runs, and ends.
      this.logger.debug(`Job of cancelled reminder ${id} left to end by itself: ${(error as Error).message}`);
    }
    return reminder;
  }

  /** Stops taking due reminders first: the drain that follows must not start new pushes. */
  async onModuleDestroy(): Promise<void> {
    await this.stopWorker(false);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.close();
  }

  /**
   * Stops the worker (waiting up to `shutdownWaitMs` for reminders being spoken, unless `force`)
   * and closes the queue and the connections. Reminders not yet due stay in Redis for the other
   * instances, or for the next start.
   */
  close(force = false): Promise<void> {
    this.closing ??= (async () => {
      await this.stopWorker(force);
      await this.queue.close().catch(() => undefined);
      if (force) this.redis.disconnect();
      else await this.redis.quit().catch(() => this.redis.disconnect());
    })();
    return this.closing;
  }

  private startWorker(connection: RedisOptions, failed: (error: Error) => void): void {
    const { lockDurationMs, stalledIntervalMs, concurrency } = this.tuning;
    const worker = new Worker<ReminderJobData>(REMINDER_QUEUE, (job) => this.process(job), {
      connection,
      prefix: this.queue.opts.prefix,
      concurrency,
      lockDuration: lockDurationMs,
      stalledInterval: stalledIntervalMs,
      // A job is taken over after each worker that held it died; the claim keeps it to one push.
      maxStalledCount: 10,
    });
    worker.on('error', failed);
    worker.on('failed', (job, error) => this.logger.warn(`Reminder ${job?.id ?? '?'} failed: ${error.message}`));
    this.worker = worker;
  }

  private async stopWorker(force: boolean): Promise<void> {
    const worker = this.worker;
    if (!worker) return;
    this.worker = undefined;
    if (force) {
      this.stopping.abort();
      await this.forceClose(worker);
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), this.tuning.shutdownWaitMs)));
    const outcome = await Promise.race([
      worker.close().then(
        () => 'closed' as const,
        () => 'closed' as const,
      ),
      waited,
    ]);
    clearTimeout(timer);
    if (outcome === 'late') {
      this.logger.warn(`Reminders still being spoken after ${this.tuning.shutdownWaitMs} ms; stopping anyway`);
      this.stopping.abort();
      await this.forceClose(worker);
    }
  }

  /**
   * Closes the worker without waiting for its jobs, and at most {@link FORCED_CLOSE_MS}: a worker
   * whose blocking connection Redis dropped can wait for ever in `close`, and a shutdown must end.
   * Past that its connections are cut.
   */
  private async forceClose(worker: Worker<ReminderJobData>): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), FORCED_CLOSE_MS)));
    const outcome = await Promise.race([
      worker.close(true).then(
        () => 'closed' as const,
        () => 'closed' as const,
      ),
      late,
    ]);
    clearTimeout(timer);
    // Not awaited: a worker stuck on a dead connection can wait in `disconnect` too.
    if (outcome === 'late') void worker.disconnect().catch(() => undefined);
  }

  /** One due job: claims its reminder, then speaks it; a reminder claimed already (or cancelled) ends the job. */
  private async process(job: Job<ReminderJobData>): Promise<'spoken' | 'gone'> {
    const { id, deviceId, owner } = job.data;
    const record = (await this.redis.claimReminder(...this.keysOf(id, deviceId, owner), this.firedKey(id), id, FIRED_TTL_MS)) as string | null;
    if (record === null) return 'gone';
    await this.deliver(JSON.parse(record) as Reminder, this.stopping.signal);
    return 'spoken';
  }

  private keysOf(id: string, deviceId: string, owner: string): [string, string, string] {
    return [this.recordKey(id), this.deviceKey(deviceId), `${this.prefix}reminders:owner:${owner}`];
  }

  private recordKey(id: string): string {
    return `${this.prefix}reminders:r:${id}`;
  }

  private deviceKey(deviceId: string): string {
    return `${this.prefix}reminders:device:${deviceId}`;
  }

  private firedKey(id: string): string {
    return `${this.prefix}reminder-fired:${id}`;
  }
}

/** The worker's own connections, to the same server as `options` (ioredis parsed `REDIS_URL` into them). */
function workerConnection(options: RedisOptions): RedisOptions {
  const { host, port, path, username, password, db, tls, family } = options;
  const server = Object.fromEntries(Object.entries({ host, port, path, username, password, db, tls, family }).filter(([, value]) => value !== undefined));
  // BullMQ's blocking connection must retry its commands for ever (maxRetriesPerRequest null).
  return { ...server, connectTimeout: 5000, maxRetriesPerRequest: null };
}
