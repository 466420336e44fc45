import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateTaskResultSchema } from '@modelcontextprotocol/sdk/experimental/tasks/types.js';
import {
  CallToolResultSchema,
  CancelTaskResultSchema,
  GetTaskResultSchema,
  ListTasksResultSchema,
  RELATED_TASK_META_KEY,
  Task,
} from '@modelcontextprotocol/sdk/types.js';
import type Redis from 'ioredis';
import type { EnvironmentInput } from '../../src/config/environment';
import { ToolRegistryService } from '../../src/core/tools/tool-registry.service';
import { RunningGateway, startGateway } from '../support/gateway';
import { modernRequest } from '../support/mcp-http';
import { inspector, removeKeys, TEST_REDIS_URL, uniquePrefix } from '../support/redis';
import { until } from '../support/upstreams';

const ALICE = 'alice-token-of-the-task-tests';
const BOB = 'bob-token-of-the-task-tests';
const CAROL = 'carol-token-of-the-task-tests';
const DAVE = 'dave-token-of-the-task-tests';

async function clientOf(gateway: RunningGateway, token: string): Promise<Client> {
  const client = new Client({ name: 'tasks-e2e', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(gateway.http('/mcp')), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  return client;
}

const startTask = (client: Client, name: string, args: Record<string, unknown>, ttl = 60_000) =>
  client.request({ method: 'tools/call', params: { name, arguments: args, task: { ttl } } }, CreateTaskResultSchema);
const getTask = (client: Client, taskId: string) => client.request({ method: 'tasks/get', params: { taskId } }, GetTaskResultSchema);
const taskResult = (client: Client, taskId: string) => client.request({ method: 'tasks/result', params: { taskId } }, CallToolResultSchema);

async function settled(client: Client, taskId: string): Promise<Task> {
  let task!: Task;
  await until(async () => !['working', 'input_required'].includes((task = await getTask(client, taskId)).status), 10_000, `task ${taskId} to end`);
  return task;
}

/**
 * MCP tasks: a long tool called as a task answers with its id at once; its status, result and
 * cancellation are asked for later, by any session of the principal that started it, and, with
 * Redis, on any instance.
 */
describe('MCP tasks', () => {
  describe('on one instance', () => {
    let gateway: RunningGateway;
    const clients: Client[] = [];
    const stopped: string[] = [];
    let progressSeen = false;

    beforeAll(async () => {
      gateway = await startGateway({ AUTH_TOKENS: `${ALICE},${BOB},${CAROL},${DAVE}`, MCP_TASK_TTL: 120, MCP_MAX_TASKS_PER_PRINCIPAL: 3 });
      gateway.app.get(ToolRegistryService).register({
        name: 'slow_job',
        description: 'Runs until stopped',
        inputSchema: { type: 'object' },
        source: 'module',
        longRunning: true,
        timeoutMs: 60_000,
        handler: (_args, { signal }) =>
          new Promise((_resolve, reject) =>
            signal.addEventListener('abort', () => {
              stopped.push('slow_job');
              reject(signal.reason);
            }),
          ),
      });
      // Reports its progress until its client has seen some (the client's GET stream opens on its own time), then ends.
      gateway.app.get(ToolRegistryService).register({
        name: 'reporting_job',
        description: 'Reports its progress',
        inputSchema: { type: 'object' },
        source: 'module',
        longRunning: true,
        timeoutMs: 10_000,
        handler: async (_args, { caller }) => {
          let step = 0;
          while (!progressSeen && step < 100) {
            await caller?.progress?.({ progress: ++step, message: `step ${step}` });
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
          return `done after ${step} steps`;
        },
      });
    });

    afterAll(async () => {
      await Promise.all(clients.map((client) => client.close()));
      await gateway?.close();
    });

    async function client(token = ALICE): Promise<Client> {
      const made = await clientOf(gateway, token);
      clients.push(made);
      return made;
    }

    it('lists long tools as able to run as tasks, and announces the tasks capability', async () => {
      const mcp = await client();
      expect(mcp.getServerCapabilities()?.tasks).toEqual({ list: {}, cancel: {}, requests: { tools: { call: {} } } });
      const { tools } = await mcp.listTools();
      expect(tools.find((tool) => tool.name === 'countdown')?.execution).toEqual({ taskSupport: 'optional' });
      expect(tools.find((tool) => tool.name === 'calculator')?.execution).toBeUndefined();
    });

    it('runs the countdown as a task: the id at once, then its status and result from another session', async () => {
      const { task } = await startTask(await client(), 'countdown', { seconds: 0.3, interval: 0.1, label: 'tea' });
      expect(task).toMatchObject({ status: 'working', ttl: 60_000 });
      const later = await client();
      expect((await settled(later, task.taskId)).status).toBe('completed');
      const result = await taskResult(later, task.taskId);
      expect(result.structuredContent).toMatchObject({ label: 'tea', done: true, remaining_s: 0 });
      expect((await later.request({ method: 'tasks/list', params: {} }, ListTasksResultSchema)).tasks.map((each) => each.taskId)).toContain(task.taskId);
    });

    it("keeps a principal's tasks from every other: not found, not listed, not cancelled", async () => {
      const { task } = await startTask(await client(), 'countdown', { seconds: 0.2 });
      const bob = await client(BOB);
      await expect(getTask(bob, task.taskId)).rejects.toMatchObject({ code: -32602 });
      await expect(taskResult(bob, task.taskId)).rejects.toMatchObject({ code: -32602 });
      await expect(bob.request({ method: 'tasks/cancel', params: { taskId: task.taskId } }, CancelTaskResultSchema)).rejects.toMatchObject({ code: -32602 });
      expect((await bob.request({ method: 'tasks/list', params: {} }, ListTasksResultSchema)).tasks).toEqual([]);
    });

    it('stops the call when its task is cancelled', async () => {
      const mcp = await client();
      const { task } = await startTask(mcp, 'slow_job', {});
      const cancelled = await mcp.request({ method: 'tasks/cancel', params: { taskId: task.taskId } }, CancelTaskResultSchema);
      expect(cancelled.status).toBe('cancelled');
      await until(() => stopped.includes('slow_job'), 5_000, 'the call to stop');
      expect((await getTask(mcp, task.taskId)).status).toBe('cancelled');
    });

    it("sends a task's progress under the request's progress token, naming the task, until it ends", async () => {
      const mcp = await client(DAVE);
      const updates: Record<string, any>[] = [];
      const { task } = await mcp.request(
        { method: 'tools/call', params: { name: 'reporting_job', arguments: {}, task: { ttl: 60_000 } } },
        CreateTaskResultSchema,
        {
          onprogress: (update) => {
            updates.push(update);
            progressSeen = true;
          },
        },
      );
      expect((await settled(mcp, task.taskId)).status).toBe('completed');
      const seen = updates.length;
      expect(seen).toBeGreaterThan(0);
      expect(updates.map((update) => update.progress)).toEqual(updates.map((_update, index) => updates[0].progress + index));
      expect(updates[0]).toMatchObject({ message: `step ${updates[0].progress}`, _meta: { [RELATED_TASK_META_KEY]: { taskId: task.taskId } } });
      expect(JSON.stringify((await taskResult(mcp, task.taskId)).content)).toContain('done after');
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(updates).toHaveLength(seen);
    });

    it('keeps a task at most MCP_TASK_TTL, and a principal at most MCP_MAX_TASKS_PER_PRINCIPAL tasks', async () => {
      const mcp = await client(BOB);
      const { task } = await startTask(mcp, 'slow_job', {}, 10_000_000);
      expect(task.ttl).toBe(120_000);
      await startTask(mcp, 'slow_job', {});
      await startTask(mcp, 'slow_job', {});
      await expect(startTask(mcp, 'slow_job', {})).rejects.toThrow(/Too many tasks/);
    });

    describe('for 2026-07-28 clients (the Tasks extension)', () => {
      // Carol's own tasks: the tests above fill Alice's and Bob's MCP_MAX_TASKS_PER_PRINCIPAL.
      const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
      const call = (token: string, name: string, args: Record<string, unknown>, capabilities: Record<string, unknown> = TASKS) =>
        modernRequest(gateway, token, 'tools/call', { name, arguments: args }, capabilities);
      const tasks = (token: string, method: string, params: Record<string, unknown>) => modernRequest(gateway, token, method, params, TASKS);

      async function ended(token: string, taskId: string): Promise<Record<string, any>> {
        let task: Record<string, any> = {};
        await until(async () => (task = (await tasks(token, 'tasks/get', { taskId })).result!).status !== 'working', 10_000, `task ${taskId} to end`);
        return task;
      }

      it('announces the extension, runs a long tool as a task for a client that declares it, and answers tasks/get with the result', async () => {
        const discovered = await modernRequest(gateway, CAROL, 'server/discover', {});
        expect(discovered.result?.capabilities?.extensions).toEqual({ 'io.modelcontextprotocol/tasks': {} });
        const started = await call(CAROL, 'countdown', { seconds: 0.3, interval: 0.1, label: 'eggs' });
        expect(started.result).toMatchObject({ resultType: 'task', status: 'working', ttlMs: 120_000, pollIntervalMs: 1000 });
        const { taskId } = started.result!;
        expect(typeof taskId).toBe('string');
        const task = await ended(CAROL, taskId);
        expect(task).toMatchObject({ resultType: 'complete', taskId, status: 'completed', result: { structuredContent: { label: 'eggs', done: true } } });
        // tasks/update has nothing to answer (a task never waits for input here), but acknowledges a known task.
        expect(await tasks(CAROL, 'tasks/update', { taskId, inputResponses: { q: { action: 'decline' } } })).toMatchObject({
          result: { resultType: 'complete' },
        });
      });

      it('answers a client that does not declare the extension, and a tool that is not long, with the result itself', async () => {
        expect((await call(CAROL, 'countdown', { seconds: 0.1, interval: 0.1 }, {})).result).toMatchObject({
          resultType: 'complete',
          structuredContent: { done: true },
        });
        expect((await call(CAROL, 'calculator', { a: 1, b: 2, operation: 'add' })).result).toMatchObject({
          resultType: 'complete',
          content: [{ type: 'text' }],
        });
      });

      it('stops the call when its task is cancelled, and keeps the task from other principals', async () => {
        const stoppedBefore = stopped.length;
        const { taskId } = (await call(CAROL, 'slow_job', {})).result!;
        for (const method of ['tasks/get', 'tasks/cancel']) expect((await tasks(BOB, method, { taskId })).error).toMatchObject({ code: -32602 });
        expect((await tasks(BOB, 'tasks/update', { taskId, inputResponses: {} })).error).toMatchObject({ code: -32602 });
        expect((await tasks(CAROL, 'tasks/cancel', { taskId })).result).toMatchObject({ resultType: 'complete' });
        await until(() => stopped.length > stoppedBefore, 5_000, 'the call to stop');
        expect((await tasks(CAROL, 'tasks/get', { taskId })).result).toMatchObject({ status: 'cancelled' });
      });

      it('answers an unknown task id, and a malformed request, with invalid params', async () => {
        expect((await tasks(CAROL, 'tasks/get', { taskId: 'no-such-task' })).error).toMatchObject({
          code: -32602,
          message: expect.stringContaining('Task not found'),
        });
        expect((await tasks(CAROL, 'tasks/get', { taskId: 42 })).error).toMatchObject({ code: -32602 });
        expect((await tasks(CAROL, 'tasks/update', { taskId: 'no-such-task' })).error).toMatchObject({ code: -32602 });
      });
    });

    it('refuses a task of a tool that does not run as one, and the session goes on', async () => {
      const mcp = await client();
      await expect(startTask(mcp, 'calculator', { a: 1, b: 2, operation: 'add' })).rejects.toMatchObject({
        code: -32601,
        message: expect.stringContaining('Tool "calculator" does not run as a task'),
      });
      expect((await mcp.callTool({ name: 'calculator', arguments: { a: 1, b: 2, operation: 'add' } })).isError).toBeFalsy();
    });
  });

  describe('across instances, with Redis', () => {
    let redis: Redis;
    const prefix = uniquePrefix();
    const gateways: RunningGateway[] = [];
    const clients: Client[] = [];

    beforeAll(async () => {
      redis = await inspector();
      const shared: EnvironmentInput = { REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: prefix, AUTH_TOKENS: `${ALICE},${BOB}` };
      gateways.push(await startGateway(shared), await startGateway(shared));
    });

    afterAll(async () => {
      await Promise.all(clients.map((client) => client.close()));
      await Promise.all(gateways.map((gateway) => gateway.close()));
      await removeKeys(redis, prefix);
      redis.disconnect();
    });

    it('answers for a task started on one instance from another, and keeps it from other principals there', async () => {
      const [a, b] = gateways;
      const onA = await clientOf(a, ALICE);
      const onB = await clientOf(b, ALICE);
      const bobOnB = await clientOf(b, BOB);
      clients.push(onA, onB, bobOnB);
      const { task } = await startTask(onA, 'countdown', { seconds: 0.3, interval: 0.1 });
      expect((await getTask(onB, task.taskId)).status).toBe('working');
      await expect(getTask(bobOnB, task.taskId)).rejects.toMatchObject({ code: -32602 });
      expect((await settled(onB, task.taskId)).status).toBe('completed');
      expect((await taskResult(onB, task.taskId)).structuredContent).toMatchObject({ done: true });
    });

    it("answers a 2026-07-28 client's tasks/get on another instance than the one running the task", async () => {
      const [a, b] = gateways;
      const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
      const started = await modernRequest(a, ALICE, 'tools/call', { name: 'countdown', arguments: { seconds: 0.3, interval: 0.1 } }, TASKS);
      const { taskId } = started.result!;
      let task: Record<string, any> = {};
      await until(async () => (task = (await modernRequest(b, ALICE, 'tasks/get', { taskId }, TASKS)).result!).status !== 'working', 10_000, 'the task to end');
      expect(task).toMatchObject({ status: 'completed', result: { structuredContent: { done: true } } });
      expect((await modernRequest(b, BOB, 'tasks/get', { taskId }, TASKS)).error).toMatchObject({ code: -32602 });
    });

    it('cancels on one instance a task running on another', async () => {
      const [a, b] = gateways;
      const onA = await clientOf(a, ALICE);
      const onB = await clientOf(b, ALICE);
      clients.push(onA, onB);
      const registryOfA = a.app.get(ToolRegistryService);
      const { task } = await startTask(onA, 'countdown', { seconds: 30, interval: 1 });
      expect(registryOfA.callsRunning).toBe(1);
      await onB.request({ method: 'tasks/cancel', params: { taskId: task.taskId } }, CancelTaskResultSchema);
      // A's watch sees the cancellation within a second and stops the countdown; no result is stored over it.
      await until(() => registryOfA.callsRunning === 0, 5_000, 'the countdown on A to stop');
      expect((await getTask(onA, task.taskId)).status).toBe('cancelled');
    });
  });
});
