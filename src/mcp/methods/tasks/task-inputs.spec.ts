import type Redis from 'ioredis';
import { inspector, removeKeys, TEST_REDIS_URL, uniquePrefix } from '../../../../test/support/redis';
import { RedisTaskStore } from './redis-task-store';
import { MemoryTaskInputs, TaskInputs } from './task-inputs';
import { RedisConnections } from '../../../core/state/shared-redis';

const QUESTION = { method: 'elicitation/create', params: { message: 'Name?', requestedSchema: { type: 'object', properties: {} } } };

/** The same behaviour of both stores of a task's questions and answers. */
describe.each([
  ['MemoryTaskInputs', false],
  ['RedisTaskStore', true],
])('%s as the inputs of tasks', (_name, inRedis) => {
  let redis: Redis;
  let prefix: string;
  let store: RedisTaskStore | undefined;
  let inputs: TaskInputs;
  let taskId: string;

  beforeAll(async () => {
    if (inRedis) redis = await inspector();
  });
  afterAll(async () => {
    await redis?.quit();
  });
  beforeEach(async () => {
    prefix = uniquePrefix();
    if (inRedis) {
      store = RedisTaskStore.connect(new RedisConnections(TEST_REDIS_URL, prefix), { maxTtlMs: 60_000, maxTasksPerOwner: 10, pollIntervalMs: 1000 });
      taskId = (await store.createTask({}, 1, { method: 'tools/call' }, 'alice')).taskId;
      inputs = store;
    } else {
      taskId = 'a-task';
      inputs = new MemoryTaskInputs();
    }
  });
  afterEach(async () => {
    await store?.close();
    if (inRedis) await removeKeys(redis, prefix);
  });

  it('shows open questions, keeps answers to open ones only, and hands each answer over once', async () => {
    await inputs.setQuestion(taskId, 'alice', 'elicitation-1', QUESTION);
    expect(await inputs.questions(taskId, 'alice')).toEqual({ 'elicitation-1': QUESTION });
    await inputs.answer(taskId, 'alice', { 'elicitation-1': { action: 'accept', content: { n: [] } }, 'elicitation-2': { action: 'decline' } });
    expect(await inputs.takeAnswers(taskId, 'alice', ['elicitation-1', 'elicitation-2'])).toEqual({
      'elicitation-1': { action: 'accept', content: { n: [] } },
    });
    expect(await inputs.takeAnswers(taskId, 'alice', ['elicitation-1'])).toEqual({});
    await inputs.setQuestion(taskId, 'alice', 'elicitation-1', undefined);
    expect(await inputs.questions(taskId, 'alice')).toEqual({});
  });

  it("keeps a task's questions and answers from other owners", async () => {
    await inputs.setQuestion(taskId, 'alice', 'elicitation-1', QUESTION);
    expect(await inputs.questions(taskId, 'bob')).toEqual({});
    await inputs.answer(taskId, 'bob', { 'elicitation-1': { action: 'accept' } });
    await inputs.setQuestion(taskId, 'bob', 'elicitation-1', QUESTION);
    expect(await inputs.takeAnswers(taskId, 'alice', ['elicitation-1'])).toEqual({});
    if (inRedis) expect(await redis.keys(`${prefix}*`)).toHaveLength(2);
  });
});
