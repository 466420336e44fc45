import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import type { TaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import type { CreateTaskResult } from '@modelcontextprotocol/sdk/experimental/tasks/types.js';
import type { RequestTaskStore } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { CallToolResult, ErrorCode, McpError, RequestId, Task } from '@modelcontextprotocol/sdk/types.js';
import { GATEWAY_CONFIG, GatewayConfig } from '../../../config/gateway-config';
import { BoundedMemoryTaskStore } from './memory-task-store';
import { RedisTaskStore } from './redis-task-store';
import { MemoryTaskInputs, TaskInputs } from './task-inputs';
import { GatewayState } from '../../../core/state/gateway-state';

/** What starting a task needs of a store: the SDK's store of one request, or {@link McpTasks.starterFor}'s. */
export type TaskStarter = Pick<RequestTaskStore, 'createTask' | 'getTask' | 'storeTaskResult'>;

/** How often a running task looks whether its client cancelled it (`tasks/cancel` may reach another instance). */
export const POLL_INTERVAL_MS = 1000;

/**
 * MCP tasks (protocol revision 2025-11-25): a client may run a long tool (`execution.taskSupport:
 * "optional"`: the countdown, upstream tools that allow it) as a task, get its id at once, and
 * ask for its status (`tasks/get`), its result (`tasks/result`) or its end (`tasks/cancel`) later,
 * from any session of the same principal. The SDK answers those requests from the store; this
 * service holds the store (in Redis with `REDIS_URL`, so any instance answers, else in memory)
 * and runs the calls. A task belongs to the principal that started it: another one's task is
 * not found.
 */
@Injectable()
export class McpTasks implements OnApplicationShutdown {
  private readonly logger = new Logger('MCP');
  private readonly store: BoundedMemoryTaskStore | RedisTaskStore;
  /** What running tasks ask their clients, beside the tasks: in Redis with them, else here. */
  readonly inputs: TaskInputs;

  constructor(@Inject(GATEWAY_CONFIG) config: GatewayConfig, state: GatewayState) {
    const limits = { maxTtlMs: config.mcp.tasks.ttlMs, maxTasksPerOwner: config.mcp.tasks.maxPerPrincipal };
    const memory = () => new BoundedMemoryTaskStore(limits);
    this.store = config.mcp.enabled
      ? state.choose<BoundedMemoryTaskStore | RedisTaskStore>({
          memory,
          redis: (redis) => RedisTaskStore.connect(redis, { ...limits, pollIntervalMs: POLL_INTERVAL_MS }),
        })
      : memory();
    this.inputs = this.store instanceof RedisTaskStore ? this.store : new MemoryTaskInputs();
  }

  /** The store as `principal`'s sessions see it: its own tasks, whichever session or instance asks. */
  ownedBy(principal: string): TaskStore {
    const { store } = this;
    return {
      createTask: (params, requestId, request) => store.createTask({ pollInterval: POLL_INTERVAL_MS, ...params }, requestId, request, principal),
      getTask: (taskId) => store.getTask(taskId, principal),
      storeTaskResult: (taskId, status, result) => store.storeTaskResult(taskId, status, result, principal),
      getTaskResult: (taskId) => store.getTaskResult(taskId, principal),
      updateTaskStatus: (taskId, status, message) => store.updateTaskStatus(taskId, status, message, principal),
      listTasks: (cursor) => store.listTasks(cursor, principal),
    };
  }

  /** `principal`'s task `taskId`, or -32602 in the words the SDK uses when it has none. */
  async findTask(principal: string, taskId: string): Promise<Task> {
    return (await this.ownedBy(principal).getTask(taskId)) ?? Promise.reject(new McpError(ErrorCode.InvalidParams, 'Failed to retrieve task: Task not found'));
  }

  /** What {@link start} needs to start a task of `principal` for `request` without the SDK 1.x server (the 2026 revision's tasks). */
  starterFor(principal: string, request: { id: RequestId; method: string; params?: Record<string, unknown> }): TaskStarter {
    const store = this.ownedBy(principal);
    return {
      createTask: (params) => store.createTask(params, request.id, { method: request.method, params: request.params }),
      getTask: (taskId) => this.findTask(principal, taskId),
      storeTaskResult: (taskId, status, result) => store.storeTaskResult(taskId, status, result),
    };
  }

  /**
   * Starts `call` as a task and answers with it at once. The call runs on, stopped when the client
   * cancels the task (seen within a second, on any instance); its result is stored as the task's
   * (`failed` when the tool failed, or the call failed with an error, whose message is the
   * result's text), unless the task was cancelled or has expired meanwhile.
   */
  async start(
    tasks: TaskStarter,
    ttl: number | null | undefined,
    call: (signal: AbortSignal, task: Task) => Promise<CallToolResult>,
  ): Promise<CreateTaskResult> {
    const task = await tasks.createTask({ ttl: ttl ?? undefined });
    const stop = new AbortController();
    const watch = setInterval(() => {
      tasks.getTask(task.taskId).then(
        (now) => (!now || now.status === 'cancelled') && stop.abort(),
        () => undefined,
      );
    }, POLL_INTERVAL_MS);
    watch.unref();
    void call(stop.signal, task)
      .then(
        async (result) => {
          if (stop.signal.aborted) return;
          await tasks.storeTaskResult(task.taskId, result.isError ? 'failed' : 'completed', result);
        },
        async (error: unknown) => {
          if (stop.signal.aborted) return;
          await tasks.storeTaskResult(task.taskId, 'failed', { content: [{ type: 'text', text: (error as Error).message }], isError: true });
        },
      )
      .catch((error: unknown) => this.logger.warn(`MCP task ${task.taskId} could not keep its result: ${(error as Error).message}`))
      .finally(() => clearInterval(watch));
    return { task };
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.store instanceof RedisTaskStore) await this.store.close();
  }
}
