import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateTaskResultSchema } from '@modelcontextprotocol/sdk/experimental/tasks/types.js';
import { CallToolResultSchema, CancelTaskResultSchema, GetTaskResultSchema, ListTasksResultSchema, Task } from '@modelcontextprotocol/sdk/types.js';
import type Redis from 'ioredis';
import type { EnvironmentInput } from '../../src/config/environment';
import { ToolRegistryService } from '../../src/core/tools/tool-registry.service';
import { RunningGateway, startGateway } from '../support/gateway';
import { inspector, removeKeys, TEST_REDIS_URL, uniquePrefix } from '../support/redis';
import { until } from '../support/upstreams';

const ALICE = 'alice-token-of-the-task-tests';
const BOB = 'bob-token-of-the-task-tests';

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

    beforeAll(async () => {
      gateway = await startGateway({ AUTH_TOKENS: `${ALICE},${BOB}`, MCP_TASK_TTL: 120, MCP_MAX_TASKS_PER_PRINCIPAL: 3 });
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

    it('keeps a task at most MCP_TASK_TTL, and a principal at most MCP_MAX_TASKS_PER_PRINCIPAL tasks', async () => {
      const mcp = await client(BOB);
      const { task } = await startTask(mcp, 'slow_job', {}, 10_000_000);
      expect(task.ttl).toBe(120_000);
      await startTask(mcp, 'slow_job', {});
      await startTask(mcp, 'slow_job', {});
      await expect(startTask(mcp, 'slow_job', {})).rejects.toThrow(/Too many tasks/);
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
