import { InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js';
import type { CreateTaskOptions } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import { ErrorCode, McpError, Request, RequestId, Task } from '@modelcontextprotocol/sdk/types.js';

/**
 * The SDK's in-memory task store (one instance, no `REDIS_URL`), bounded: every task expires
 * within `maxTtlMs` (a client asking for no limit gets it too), and an owner holds at most
 * `maxTasksPerOwner` tasks at once. The owner is what the store calls a session id: the gateway
 * passes the caller's principal there (see `ownedBy`).
 */
export class BoundedMemoryTaskStore extends InMemoryTaskStore {
  /** Each owner's task ids, pruned of expired ones when it creates another. */
  private readonly owned = new Map<string, Set<string>>();

  constructor(private readonly limits: { maxTtlMs: number; maxTasksPerOwner: number }) {
    super();
  }

  override async createTask(taskParams: CreateTaskOptions, requestId: RequestId, request: Request, owner?: string): Promise<Task> {
    const key = owner ?? '';
    const ids = this.owned.get(key) ?? new Set<string>();
    for (const id of ids) if (!(await this.getTask(id, owner))) ids.delete(id);
    if (ids.size >= this.limits.maxTasksPerOwner) {
      throw new McpError(ErrorCode.InvalidRequest, `Too many tasks: this token holds ${ids.size} (MCP_MAX_TASKS_PER_PRINCIPAL); wait for one to expire`);
    }
    const ttl = Math.min(taskParams.ttl ?? this.limits.maxTtlMs, this.limits.maxTtlMs);
    const task = await super.createTask({ ...taskParams, ttl }, requestId, request, owner);
    ids.add(task.taskId);
    this.owned.set(key, ids);
    this.unrefTimer(task.taskId);
    return task;
  }

  override async storeTaskResult(...args: Parameters<InMemoryTaskStore['storeTaskResult']>): Promise<void> {
    await super.storeTaskResult(...args);
    this.unrefTimer(args[0]);
  }

  override async updateTaskStatus(...args: Parameters<InMemoryTaskStore['updateTaskStatus']>): Promise<void> {
    await super.updateTaskStatus(...args);
    this.unrefTimer(args[0]);
  }

  /** The store's expiry timers must not keep the process alive at shutdown. */
  private unrefTimer(taskId: string): void {
    (this as unknown as { cleanupTimers: Map<string, NodeJS.Timeout> }).cleanupTimers.get(taskId)?.unref();
  }
}
