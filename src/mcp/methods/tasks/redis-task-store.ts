import { createHash, randomUUID } from 'crypto';
import type Redis from 'ioredis';
import { isTerminal, type CreateTaskOptions, type TaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import { ErrorCode, McpError, type Request, type RequestId, type Result, type Task } from '@modelcontextprotocol/sdk/types.js';
import { COMMAND_TIMEOUT_MS } from '../../../core/redis/redis-connection';
import type { TaskInputs, TaskQuestion } from './task-inputs';
import type { SharedRedis } from '../../../core/state/shared-redis';

/** Largest stored result (and original request), as UTF-8 JSON: a task's hash must stay a bounded Redis value. */
export const MAX_TASK_PAYLOAD_BYTES = 2 * 1024 * 1024;

/** Tasks per `listTasks` page. */
export const TASK_PAGE_SIZE = 100;

/** The ids this store hands out; anything else cannot name a task, so it is not looked up at all. */
const TASK_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The task's fields kept in its hash, in `HMGET` order. */
const TASK_FIELDS = ['owner', 'status', 'statusMessage', 'ttl', 'createdAt', 'lastUpdatedAt', 'pollInterval'] as const;

/**
 * Each script works on one owner's keys (KEYS: the task's hash, the owner's sorted set of task
 * ids scored by expiry time) and first drops that set's expired members, so a task that expired
 * (its hash gone by PEXPIRE) frees its place without anyone removing it. The owner's set is kept
 * for `maxTtlMs` past its last write, which outlives every member's expiry.
 */
const SCRIPTS = {
  createMcpTask: {
    numberOfKeys: 2,
    // ARGV: now, expires at, ttl ms, limit, task id, max ttl ms, then the hash's field/value pairs.
    // Returns 1, 0 when the owner holds `limit` tasks, -1 when the id is taken.
    lua: `
      redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])
      if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then return 0 end
      if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end
      redis.call('HSET', KEYS[1], unpack(ARGV, 7))
      redis.call('PEXPIRE', KEYS[1], ARGV[3])
      redis.call('ZADD', KEYS[2], ARGV[2], ARGV[5])
      redis.call('PEXPIRE', KEYS[2], ARGV[6])
      return 1`,
  },
  updateMcpTask: {
    numberOfKeys: 2,
    // ARGV: now, owner, task id, max ttl ms, new status, whether it is terminal ('1'/'0'), updated at,
    // status message ('' keeps the current one), result JSON ('' stores none).
    // Returns 'ok', 'missing', or {'terminal', current status}.
    lua: `
      redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])
      local task = redis.call('HMGET', KEYS[1], 'owner', 'status', 'terminal', 'ttl')
      if task[1] ~= ARGV[2] then return 'missing' end
      if task[3] == '1' then return {'terminal', task[2]} end
      redis.call('HSET', KEYS[1], 'status', ARGV[5], 'terminal', ARGV[6], 'lastUpdatedAt', ARGV[7])
      if ARGV[8] ~= '' then redis.call('HSET', KEYS[1], 'statusMessage', ARGV[8]) end
      if ARGV[9] ~= '' then redis.call('HSET', KEYS[1], 'result', ARGV[9]) end
      if ARGV[6] == '1' then
        redis.call('PEXPIRE', KEYS[1], task[4])
        redis.call('ZADD', KEYS[2], string.format('%.0f', tonumber(ARGV[1]) + tonumber(task[4])), ARGV[3])
        redis.call('PEXPIRE', KEYS[2], ARGV[4])
      end
      return 'ok'`,
  },
  setMcpTaskInput: {
    numberOfKeys: 1,
    // ARGV: owner, field, value ('' removes the field). Returns 1, or 0 when the task is gone or another owner's.
    lua: `
      if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return 0 end
      if ARGV[3] == '' then redis.call('HDEL', KEYS[1], ARGV[2]) else redis.call('HSET', KEYS[1], ARGV[2], ARGV[3]) end
      return 1`,
  },
  answerMcpTask: {
    numberOfKeys: 1,
    // ARGV: owner, then key/answer JSON pairs; an answer is kept only for an open question (a 'question:<key>' field).
    lua: `
      if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return 0 end
      for i = 2, #ARGV, 2 do
        if redis.call('HEXISTS', KEYS[1], 'question:' .. ARGV[i]) == 1 then redis.call('HSET', KEYS[1], 'answer:' .. ARGV[i], ARGV[i + 1]) end
      end
      return 1`,
  },
  listMcpTasks: {
    numberOfKeys: 1,
    // KEYS: the owner's set only. ARGV: now, cursor's score ('' for the first page), cursor's task id, count.
    // Returns up to `count` task ids after the cursor, with their scores. The cursor's own task may be
    // gone or rescored, so its place is found with a stand-in member sorting just after it: the id
    // plus '~' (ids are all one length, so no other id sorts between them), added and removed again.
    lua: `
      redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
      local start = 0
      if ARGV[2] ~= '' then
        local standIn = ARGV[3] .. '~'
        redis.call('ZADD', KEYS[1], ARGV[2], standIn)
        start = redis.call('ZRANK', KEYS[1], standIn)
        redis.call('ZREM', KEYS[1], standIn)
      end
      return redis.call('ZRANGE', KEYS[1], start, start + tonumber(ARGV[4]) - 1, 'WITHSCORES')`,
  },
} as const;

type ScriptedRedis = Redis & Record<keyof typeof SCRIPTS, (...args: (string | number)[]) => Promise<unknown>>;

export interface RedisTaskStoreOptions {
  /** Longest a task is kept; a requested ttl above it, or none (null/undefined), becomes it. */
  maxTtlMs: number;
  /** Tasks one owner may hold at once, across all replicas. */
  maxTasksPerOwner: number;
  /** The poll interval a task gets when its creator asks for none. */
  pollIntervalMs: number;
}

/**
 * The SDK's experimental {@link TaskStore} in Redis, so a task started on one gateway replica is
 * polled, listed, cancelled and its result fetched on any other (a client that reconnects lands
 * wherever the balancer sends it).
 *
 * The `sessionId` every method takes is the task's owner (the gateway passes the caller's
 * principal), and an absent one is the owner `""`: a task is only ever seen by the owner that
 * created it; for anyone else it does not exist. Unlike `InMemoryTaskStore`, no call sees every
 * owner's tasks, and every task expires (after at most `maxTtlMs`).
 *
 * Per task, a hash `<prefix>mcp-task:{<owner digest>}:<task id>` (owner, status, statusMessage,
 * terminal, ttl, createdAt, lastUpdatedAt, pollInterval, requestId, request and result as JSON;
 * while it asks its client something, `question:<key>` and the answers not yet taken, `answer:<key>`),
 * expiring after the task's ttl from creation and again from when it reaches a terminal status,
 * as `InMemoryTaskStore` restarts its cleanup timer then. Per owner, a sorted set
 * `<prefix>mcp-tasks:{<owner digest>}` of task ids scored by expiry time, which counts the
 * owner's tasks across replicas and orders its listing. The owner's digest is the hash tag, so
 * a Redis Cluster keeps an owner's keys in one slot, and another owner's lookup reads another key.
 */
export class RedisTaskStore implements TaskStore, TaskInputs {
  private connecting: Promise<ScriptedRedis> | undefined;
  private closed = false;

  private readonly prefix: string;

  private constructor(
    private readonly shared: SharedRedis,
    private readonly options: RedisTaskStoreOptions,
  ) {
    this.prefix = shared.keyPrefix;
  }

  /**
   * A store on the shared Redis, connecting in the background: the task API is async anyway, so a
   * call made before the connection is up waits for it, and one made when Redis could not be
   * reached fails with `RedisUnavailableError` and the next call tries again.
   */
  static connect(shared: SharedRedis, options: RedisTaskStoreOptions): RedisTaskStore {
    for (const name of ['maxTtlMs', 'maxTasksPerOwner', 'pollIntervalMs'] as const) {
      const value = options[name];
      if (!Number.isSafeInteger(value) || value < 1) throw new Error(`RedisTaskStore: ${name} must be a positive integer, not ${value}`);
    }
    const store = new RedisTaskStore(shared, { ...options });
    void store.client().catch(() => undefined);
    return store;
  }

  async createTask(taskParams: CreateTaskOptions, requestId: RequestId, request: Request, sessionId?: string): Promise<Task> {
    const owner = sessionId ?? '';
    const requestJson = boundedJson(request, 'The request of a task');
    const taskId = randomUUID();
    const ttl = this.ttlOf(taskParams.ttl);
    const now = Date.now();
    const createdAt = new Date(now).toISOString();
    const pollInterval = taskParams.pollInterval ?? this.options.pollIntervalMs;
    const task: Task = { taskId, status: 'working', ttl, createdAt, lastUpdatedAt: createdAt, pollInterval };
    const fields = {
      owner,
      status: task.status,
      terminal: '0',
      ttl,
      createdAt,
      lastUpdatedAt: createdAt,
      pollInterval,
      requestId: JSON.stringify(requestId),
      request: requestJson,
    };
    const redis = await this.client();
    const created = await redis.createMcpTask(
      ...this.keys(taskId, owner),
      now,
      now + ttl,
      ttl,
      this.options.maxTasksPerOwner,
      taskId,
      this.options.maxTtlMs,
      ...Object.entries(fields).flat(),
    );
    if (created === 0) {
      throw new McpError(
        ErrorCode.InvalidRequest,
        `Too many tasks: at most ${this.options.maxTasksPerOwner} may exist at once per caller; wait for some to finish and expire`,
      );
    }
    if (created !== 1) throw new Error(`Task with ID ${taskId} already exists`);
    return task;
  }

  async getTask(taskId: string, sessionId?: string): Promise<Task | null> {
    if (!TASK_ID.test(taskId)) return null;
    const owner = sessionId ?? '';
    const redis = await this.client();
    const [key] = this.keys(taskId, owner);
    return taskOf(taskId, owner, await redis.hmget(key, ...TASK_FIELDS));
  }

  async storeTaskResult(taskId: string, status: 'completed' | 'failed', result: Result, sessionId?: string): Promise<void> {
    const resultJson = boundedJson(result, `The result of task ${taskId}`);
    await this.update(taskId, status, undefined, resultJson, sessionId, (current) => {
      return `Cannot store result for task ${taskId} in terminal status '${current}'. Task results can only be stored once.`;
    });
  }

  async getTaskResult(taskId: string, sessionId?: string): Promise<Result> {
    if (!TASK_ID.test(taskId)) throw notFound(taskId);
    const owner = sessionId ?? '';
    const redis = await this.client();
    const [key] = this.keys(taskId, owner);
    const [storedOwner, result] = await redis.hmget(key, 'owner', 'result');
    if (storedOwner !== owner) throw notFound(taskId);
    if (result === null) throw new Error(`Task ${taskId} has no result stored`);
    return JSON.parse(result) as Result;
  }

  async updateTaskStatus(taskId: string, status: Task['status'], statusMessage?: string, sessionId?: string): Promise<void> {
    await this.update(taskId, status, statusMessage, undefined, sessionId, (current) => {
      return `Cannot update task ${taskId} from terminal status '${current}' to '${status}'. Terminal states (completed, failed, cancelled) cannot transition to other states.`;
    });
  }

  /**
   * The owner's tasks in order of expiry, {@link TASK_PAGE_SIZE} at a time. The cursor names the
   * last task of the page before, so a task that expires meanwhile shifts nothing; a task whose
   * expiry moved on (it reached a terminal status) may be listed again, but none is skipped.
   */
  async listTasks(cursor?: string, sessionId?: string): Promise<{ tasks: Task[]; nextCursor?: string }> {
    const owner = sessionId ?? '';
    const after = cursor === undefined ? undefined : parseCursor(cursor);
    const redis = await this.client();
    const [, setKey] = this.keys('', owner);
    const reply = (await redis.listMcpTasks(setKey, Date.now(), after?.score ?? '', after?.taskId ?? '', TASK_PAGE_SIZE + 1)) as string[];
    const page: { taskId: string; score: string }[] = [];
    for (let i = 0; i < reply.length; i += 2) page.push({ taskId: reply[i], score: reply[i + 1] });
    const more = page.length > TASK_PAGE_SIZE;
    page.length = Math.min(page.length, TASK_PAGE_SIZE);
    const pipeline = redis.pipeline();
    for (const { taskId } of page) pipeline.hmget(this.keys(taskId, owner)[0], ...TASK_FIELDS);
    const replies = (await pipeline.exec()) ?? [];
    const tasks: Task[] = [];
    replies.forEach(([error, fields], i) => {
      if (error) throw error;
      const task = taskOf(page[i].taskId, owner, fields as (string | null)[]);
      if (task) tasks.push(task);
    });
    const last = page[page.length - 1];
    return more ? { tasks, nextCursor: Buffer.from(`${last.score}:${last.taskId}`).toString('base64url') } : { tasks };
  }

  /** {@link TaskInputs.setQuestion}: `question:<key>` in the task's hash, and the `answer:<key>` beside it removed. */
  async setQuestion(taskId: string, owner: string, key: string, question: TaskQuestion | undefined): Promise<void> {
    const redis = await this.client();
    const [task] = this.keys(taskId, owner);
    await redis.setMcpTaskInput(task, owner, `answer:${key}`, '');
    await redis.setMcpTaskInput(task, owner, `question:${key}`, question ? boundedJson(question, `A question of task ${taskId}`) : '');
  }

  async questions(taskId: string, owner: string): Promise<Record<string, TaskQuestion>> {
    if (!TASK_ID.test(taskId)) return {};
    const redis = await this.client();
    const [task] = this.keys(taskId, owner);
    const questions: Record<string, TaskQuestion> = {};
    let cursor = '0';
    do {
      const [next, fields] = await redis.hscan(task, cursor, 'MATCH', 'question:*', 'COUNT', 100);
      for (let i = 0; i < fields.length; i += 2) questions[fields[i].slice('question:'.length)] = JSON.parse(fields[i + 1]) as TaskQuestion;
      cursor = next;
    } while (cursor !== '0');
    return questions;
  }

  async answer(taskId: string, owner: string, answers: Record<string, unknown>): Promise<void> {
    if (!TASK_ID.test(taskId)) return;
    const pairs = Object.entries(answers).flatMap(([key, answer]) => [key, boundedJson(answer, `An answer to task ${taskId}`)]);
    if (pairs.length === 0) return;
    const redis = await this.client();
    await redis.answerMcpTask(this.keys(taskId, owner)[0], owner, ...pairs);
  }

  async takeAnswers(taskId: string, owner: string, keys: string[]): Promise<Record<string, unknown>> {
    if (keys.length === 0) return {};
    const redis = await this.client();
    const [task] = this.keys(taskId, owner);
    const fields = keys.map((key) => `answer:${key}`);
    const values = await redis.hmget(task, ...fields);
    const taken: Record<string, unknown> = {};
    values.forEach((value, i) => value !== null && (taken[keys[i]] = JSON.parse(value)));
    if (Object.keys(taken).length > 0) await redis.hdel(task, ...Object.keys(taken).map((key) => `answer:${key}`));
    return taken;
  }

  /** Ends the connection; later calls fail. */
  async close(): Promise<void> {
    this.closed = true;
    const connecting = this.connecting;
    this.connecting = undefined;
    const redis = await connecting?.catch(() => undefined);
    await redis?.quit().catch(() => undefined);
  }

  private async update(
    taskId: string,
    status: Task['status'],
    statusMessage: string | undefined,
    resultJson: string | undefined,
    sessionId: string | undefined,
    terminalMessage: (current: string) => string,
  ): Promise<void> {
    if (!TASK_ID.test(taskId)) throw notFound(taskId);
    const owner = sessionId ?? '';
    const redis = await this.client();
    const now = Date.now();
    const reply = await redis.updateMcpTask(
      ...this.keys(taskId, owner),
      now,
      owner,
      taskId,
      this.options.maxTtlMs,
      status,
      isTerminal(status) ? '1' : '0',
      new Date(now).toISOString(),
      statusMessage ?? '',
      resultJson ?? '',
    );
    if (reply === 'missing') throw notFound(taskId);
    if (Array.isArray(reply)) throw new Error(terminalMessage(String(reply[1])));
  }

  /** The ttl a task gets: what was asked for, within 1 ms..`maxTtlMs`; none (or a nonsensical one) is the longest. */
  private ttlOf(requested: number | null | undefined): number {
    if (typeof requested !== 'number' || !Number.isFinite(requested) || requested <= 0) return this.options.maxTtlMs;
    return Math.min(Math.ceil(requested), this.options.maxTtlMs);
  }

  private client(): Promise<ScriptedRedis> {
    if (this.closed) return Promise.reject(new Error('The task store is closed'));
    if (!this.connecting) {
      const connecting = this.open();
      this.connecting = connecting;
      connecting.catch(() => {
        if (this.connecting === connecting) this.connecting = undefined;
      });
    }
    return this.connecting;
  }

  private async open(): Promise<ScriptedRedis> {
    const [redis] = (await this.shared.connect(1, (client) => {
      for (const [name, script] of Object.entries(SCRIPTS)) client.defineCommand(name, script);
    })) as ScriptedRedis[];
    redis.options.commandTimeout = COMMAND_TIMEOUT_MS;
    // Failures reach each caller as a rejected command.
    redis.on('error', () => undefined);
    if (this.closed) {
      await redis.quit().catch(() => undefined);
      throw new Error('The task store is closed');
    }
    return redis;
  }

  private keys(taskId: string, owner: string): [task: string, tasks: string] {
    const tag = `{${createHash('sha256').update(owner).digest('hex').slice(0, 16)}}`;
    return [`${this.prefix}mcp-task:${tag}:${taskId}`, `${this.prefix}mcp-tasks:${tag}`];
  }
}

/** The error `InMemoryTaskStore` throws for a task it does not have, so callers cannot tell the stores apart. */
function notFound(taskId: string): Error {
  return new Error(`Task with ID ${taskId} not found`);
}

/** `value` as JSON, refused past {@link MAX_TASK_PAYLOAD_BYTES}. */
function boundedJson(value: unknown, what: string): string {
  const json = JSON.stringify(value) ?? 'null';
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes > MAX_TASK_PAYLOAD_BYTES) {
    throw new Error(`${what} is ${bytes} bytes of JSON, more than the ${MAX_TASK_PAYLOAD_BYTES} bytes a task may store`);
  }
  return json;
}

/** The task read back from its hash's {@link TASK_FIELDS}, or null when it is gone or `owner`'s it is not. */
function taskOf(taskId: string, owner: string, fields: (string | null)[]): Task | null {
  const [storedOwner, status, statusMessage, ttl, createdAt, lastUpdatedAt, pollInterval] = fields;
  if (storedOwner !== owner || status === null || ttl === null || createdAt === null || lastUpdatedAt === null) return null;
  const task: Task = { taskId, status: status as Task['status'], ttl: Number(ttl), createdAt, lastUpdatedAt };
  if (pollInterval !== null) task.pollInterval = Number(pollInterval);
  if (statusMessage !== null) task.statusMessage = statusMessage;
  return task;
}

/** The position a `listTasks` cursor names; a cursor this store did not hand out is refused as `InMemoryTaskStore` does. */
function parseCursor(cursor: string): { score: string; taskId: string } {
  const match = cursor.length <= 128 ? /^(\d{1,16}):(.+)$/.exec(Buffer.from(cursor, 'base64url').toString('utf8')) : null;
  if (!match || !TASK_ID.test(match[2])) throw new Error(`Invalid cursor: ${cursor.slice(0, 128)}`);
  return { score: match[1], taskId: match[2] };
}
