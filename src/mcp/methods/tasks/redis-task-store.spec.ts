import { ErrorCode, McpError, type Request } from '@modelcontextprotocol/sdk/types.js';
import type Redis from 'ioredis';
import { inspector, removeKeys, TEST_REDIS_URL, uniquePrefix } from '../../../../test/support/redis';
import { MAX_TASK_PAYLOAD_BYTES, RedisTaskStore, RedisTaskStoreOptions } from './redis-task-store';
import { RedisConnections } from '../../../core/state/shared-redis';

const OPTIONS: RedisTaskStoreOptions = { maxTtlMs: 60_000, maxTasksPerOwner: 200, pollIntervalMs: 1500 };
const REQUEST: Request = { method: 'tools/call', params: { name: 'weather', arguments: { city: 'Oslo' } } };

jest.setTimeout(15_000);

describe('RedisTaskStore', () => {
  let redis: Redis;
  let prefix: string;
  const open: RedisTaskStore[] = [];

  beforeAll(async () => {
    redis = await inspector();
  });
  afterAll(async () => {
    await redis.quit();
  });
  beforeEach(() => {
    prefix = uniquePrefix();
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((store) => store.close()));
    await removeKeys(redis, prefix);
  });

  /** A store (one gateway replica's) on the test's prefix. */
  function connect(options: Partial<RedisTaskStoreOptions> = {}): RedisTaskStore {
    const store = RedisTaskStore.connect(new RedisConnections(TEST_REDIS_URL, prefix), { ...OPTIONS, ...options });
    open.push(store);
    return store;
  }

  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  /** Polls `check` until it holds, for at most `timeoutMs`. */
  async function eventually(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`not so after ${timeoutMs} ms`);
      await pause(20);
    }
  }

  it('creates a working task, updates it, stores its result and gives it back', async () => {
    const store = connect();
    const before = Date.now();
    const task = await store.createTask({ ttl: 30_000 }, 7, REQUEST, 'alice');
    expect(task).toEqual({
      taskId: expect.any(String),
      status: 'working',
      ttl: 30_000,
      createdAt: task.createdAt,
      lastUpdatedAt: task.createdAt,
      pollInterval: 1500,
    });
    expect(task.taskId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(Date.parse(task.createdAt)).toBeGreaterThanOrEqual(before);
    expect(new Date(Date.parse(task.createdAt)).toISOString()).toBe(task.createdAt);
    expect(await store.getTask(task.taskId, 'alice')).toEqual(task);
    await expect(store.getTaskResult(task.taskId, 'alice')).rejects.toThrow(`Task ${task.taskId} has no result stored`);

    await pause(5);
    await store.updateTaskStatus(task.taskId, 'input_required', 'Which Oslo?', 'alice');
    const waiting = await store.getTask(task.taskId, 'alice');
    expect(waiting).toMatchObject({ status: 'input_required', statusMessage: 'Which Oslo?', createdAt: task.createdAt });
    expect(Date.parse(waiting!.lastUpdatedAt)).toBeGreaterThan(Date.parse(task.createdAt));

    await store.updateTaskStatus(task.taskId, 'working', undefined, 'alice');
    expect(await store.getTask(task.taskId, 'alice')).toMatchObject({ status: 'working', statusMessage: 'Which Oslo?' });

    const result = { content: [{ type: 'text', text: 'Sunny, 21 °C' }], isError: false };
    await store.storeTaskResult(task.taskId, 'completed', result, 'alice');
    expect(await store.getTask(task.taskId, 'alice')).toMatchObject({ status: 'completed', ttl: 30_000, pollInterval: 1500 });
    expect(await store.getTaskResult(task.taskId, 'alice')).toEqual(result);

    const created = await store.createTask({ pollInterval: 250 }, 'req-8', REQUEST, 'alice');
    expect(created).toMatchObject({ ttl: 60_000, pollInterval: 250 });
  });

  it('keeps a terminal status: no later update or result changes it', async () => {
    const store = connect();
    const cancelled = await store.createTask({}, 1, REQUEST, 'alice');
    await store.updateTaskStatus(cancelled.taskId, 'cancelled', 'Stopped by the user', 'alice');
    await expect(store.updateTaskStatus(cancelled.taskId, 'working', undefined, 'alice')).rejects.toThrow(
      `Cannot update task ${cancelled.taskId} from terminal status 'cancelled' to 'working'`,
    );
    await expect(store.storeTaskResult(cancelled.taskId, 'completed', { content: [] }, 'alice')).rejects.toThrow(
      `Cannot store result for task ${cancelled.taskId} in terminal status 'cancelled'. Task results can only be stored once.`,
    );
    expect(await store.getTask(cancelled.taskId, 'alice')).toMatchObject({ status: 'cancelled', statusMessage: 'Stopped by the user' });
    await expect(store.getTaskResult(cancelled.taskId, 'alice')).rejects.toThrow('has no result stored');

    const completed = await store.createTask({}, 2, REQUEST, 'alice');
    await store.storeTaskResult(completed.taskId, 'failed', { content: [{ type: 'text', text: 'boom' }], isError: true }, 'alice');
    await expect(store.storeTaskResult(completed.taskId, 'completed', { content: [] }, 'alice')).rejects.toThrow("in terminal status 'failed'");
    await expect(store.updateTaskStatus(completed.taskId, 'cancelled', undefined, 'alice')).rejects.toThrow("from terminal status 'failed' to 'cancelled'");
    expect(await store.getTaskResult(completed.taskId, 'alice')).toEqual({ content: [{ type: 'text', text: 'boom' }], isError: true });
  });

  it("hides a task from every other owner, who can change nothing of it; no owner is the owner ''", async () => {
    const store = connect();
    const task = await store.createTask({}, 1, REQUEST, 'alice');
    for (const other of ['bob', undefined, '']) {
      expect(await store.getTask(task.taskId, other)).toBeNull();
      await expect(store.getTaskResult(task.taskId, other)).rejects.toThrow(`Task with ID ${task.taskId} not found`);
      await expect(store.updateTaskStatus(task.taskId, 'cancelled', 'mine now', other)).rejects.toThrow(`Task with ID ${task.taskId} not found`);
      await expect(store.storeTaskResult(task.taskId, 'completed', { content: [] }, other)).rejects.toThrow(`Task with ID ${task.taskId} not found`);
      expect(await store.listTasks(undefined, other)).toEqual({ tasks: [] });
    }
    expect(await store.getTask(task.taskId, 'alice')).toEqual(task);
    expect(await store.listTasks(undefined, 'alice')).toEqual({ tasks: [task] });

    const anonymous = await store.createTask({}, 2, REQUEST);
    expect(await store.getTask(anonymous.taskId)).toEqual(anonymous);
    expect(await store.getTask(anonymous.taskId, '')).toEqual(anonymous);
    expect(await store.getTask(anonymous.taskId, 'alice')).toBeNull();
    expect(await store.listTasks()).toEqual({ tasks: [anonymous] });

    expect(await store.getTask('not-a-task-id', 'alice')).toBeNull();
    await expect(store.getTaskResult('../x', 'alice')).rejects.toThrow('Task with ID ../x not found');
  });

  it('lists an owner’s tasks a hundred at a time', async () => {
    const store = connect();
    const created = new Set<string>();
    for (let i = 0; i < 150; i++) created.add((await store.createTask({}, i, REQUEST, 'alice')).taskId);
    await store.createTask({}, 'other', REQUEST, 'bob');

    const first = await store.listTasks(undefined, 'alice');
    expect(first.tasks).toHaveLength(100);
    expect(typeof first.nextCursor).toBe('string');
    const second = await store.listTasks(first.nextCursor, 'alice');
    expect(second.tasks).toHaveLength(50);
    expect(second.nextCursor).toBeUndefined();
    expect(new Set([...first.tasks, ...second.tasks].map((task) => task.taskId))).toEqual(created);

    await expect(store.listTasks('bogus', 'alice')).rejects.toThrow('Invalid cursor: bogus');
  });

  it('keeps a listing whole while tasks expire or finish between its pages', async () => {
    const store = connect();
    const short = await Promise.all(Array.from({ length: 50 }, (_, i) => store.createTask({ ttl: 300 }, i, REQUEST, 'alice')));
    const long = await Promise.all(Array.from({ length: 110 }, (_, i) => store.createTask({}, i, REQUEST, 'alice')));
    const first = await store.listTasks(undefined, 'alice');
    expect(first.tasks.slice(0, 50).map((task) => task.taskId)).toEqual(expect.arrayContaining(short.map((task) => task.taskId)));
    const finished = first.tasks[99].taskId;
    await store.updateTaskStatus(finished, 'completed', undefined, 'alice');
    await eventually(async () => (await store.getTask(short[0].taskId, 'alice')) === null, 2000);
    const second = await store.listTasks(first.nextCursor, 'alice');
    expect(second.nextCursor).toBeUndefined();
    const afterFirst = new Set(long.map((task) => task.taskId));
    for (const task of first.tasks) afterFirst.delete(task.taskId);
    expect(second.tasks.map((task) => task.taskId).sort()).toEqual([...afterFirst, finished].sort());
  });

  it('clamps the ttl to maxTtlMs and forgets a task once its ttl has passed', async () => {
    const store = connect({ maxTtlMs: 5000 });
    const unlimited = await store.createTask({ ttl: null }, 1, REQUEST, 'alice');
    const tooLong = await store.createTask({ ttl: 86_400_000 }, 2, REQUEST, 'alice');
    const unasked = await store.createTask({}, 3, REQUEST, 'alice');
    for (const task of [unlimited, tooLong, unasked]) {
      expect(task.ttl).toBe(5000);
      expect((await store.getTask(task.taskId, 'alice'))?.ttl).toBe(5000);
    }
    const [taskKey] = await redis.keys(`${prefix}mcp-task:*:${unlimited.taskId}`);
    expect(await redis.pttl(taskKey)).toBeGreaterThan(4000);
    expect(await redis.pttl(taskKey)).toBeLessThanOrEqual(5000);

    const brief = await store.createTask({ ttl: 50 }, 4, REQUEST, 'alice');
    expect(brief.ttl).toBe(50);
    await pause(100);
    expect(await store.getTask(brief.taskId, 'alice')).toBeNull();
    await expect(store.getTaskResult(brief.taskId, 'alice')).rejects.toThrow('not found');
    expect((await store.listTasks(undefined, 'alice')).tasks.map((task) => task.taskId)).not.toContain(brief.taskId);
  });

  it('keeps a finished task for its ttl again from when it finished', async () => {
    const store = connect();
    const task = await store.createTask({ ttl: 400 }, 1, REQUEST, 'alice');
    await pause(250);
    await store.storeTaskResult(task.taskId, 'completed', { content: [] }, 'alice');
    await pause(250);
    expect(await store.getTask(task.taskId, 'alice')).toMatchObject({ status: 'completed' });
    expect(await store.getTaskResult(task.taskId, 'alice')).toEqual({ content: [] });
    await eventually(async () => (await store.getTask(task.taskId, 'alice')) === null, 1000);
  });

  it('refuses a task past maxTasksPerOwner until one expires', async () => {
    const store = connect({ maxTasksPerOwner: 3 });
    await store.createTask({ ttl: 200 }, 1, REQUEST, 'alice');
    await store.createTask({}, 2, REQUEST, 'alice');
    const finished = await store.createTask({}, 3, REQUEST, 'alice');
    await store.updateTaskStatus(finished.taskId, 'completed', undefined, 'alice');
    const refusal = await store.createTask({}, 4, REQUEST, 'alice').catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(McpError);
    expect((refusal as McpError).code).toBe(ErrorCode.InvalidRequest);
    expect((refusal as McpError).message).toMatch(/Too many tasks: at most 3/);
    await expect(connect({ maxTasksPerOwner: 3 }).createTask({}, 4, REQUEST, 'alice')).rejects.toThrow('Too many tasks');
    expect((await store.createTask({}, 5, REQUEST, 'bob')).status).toBe('working');

    await pause(250);
    expect((await store.createTask({}, 6, REQUEST, 'alice')).status).toBe('working');
    await expect(store.createTask({}, 7, REQUEST, 'alice')).rejects.toThrow('Too many tasks');
  });

  it('shares tasks between replicas on the same prefix', async () => {
    const [one, two] = [connect(), connect()];
    const task = await one.createTask({}, 1, REQUEST, 'alice');
    expect(await two.getTask(task.taskId, 'alice')).toEqual(task);
    await two.updateTaskStatus(task.taskId, 'input_required', 'Which Oslo?', 'alice');
    expect(await one.getTask(task.taskId, 'alice')).toMatchObject({ status: 'input_required' });
    await one.storeTaskResult(task.taskId, 'completed', { content: [{ type: 'text', text: 'Sunny' }] }, 'alice');
    expect(await two.getTaskResult(task.taskId, 'alice')).toEqual({ content: [{ type: 'text', text: 'Sunny' }] });
    await expect(two.updateTaskStatus(task.taskId, 'cancelled', undefined, 'alice')).rejects.toThrow('terminal status');
    expect((await two.listTasks(undefined, 'alice')).tasks.map((listed) => listed.taskId)).toEqual([task.taskId]);

    const elsewhere = RedisTaskStore.connect(new RedisConnections(TEST_REDIS_URL, uniquePrefix()), OPTIONS);
    open.push(elsewhere);
    expect(await elsewhere.getTask(task.taskId, 'alice')).toBeNull();
  });

  it('refuses a result of more than 2 MB and keeps the task working', async () => {
    const store = connect();
    const task = await store.createTask({}, 1, REQUEST, 'alice');
    const huge = { content: [{ type: 'text', text: 'x'.repeat(MAX_TASK_PAYLOAD_BYTES) }] };
    await expect(store.storeTaskResult(task.taskId, 'completed', huge, 'alice')).rejects.toThrow(/more than the 2097152 bytes a task may store/);
    expect(await store.getTask(task.taskId, 'alice')).toMatchObject({ status: 'working' });
  });

  it('keeps its keys under the prefix, each expiring', async () => {
    const store = connect();
    await store.createTask({}, 1, REQUEST, 'alice');
    await store.createTask({}, 2, REQUEST);
    const keys = await redis.keys(`${prefix}*`);
    expect(keys).toHaveLength(4);
    for (const key of keys) {
      expect(key).toMatch(new RegExp(`^${prefix}mcp-tasks?:\\{[0-9a-f]{16}\\}`));
      expect(await redis.pttl(key)).toBeGreaterThan(0);
    }
    await store.close();
    await expect(store.getTask('x', 'alice')).resolves.toBeNull();
    await expect(store.listTasks(undefined, 'alice')).rejects.toThrow('closed');
  });
});
