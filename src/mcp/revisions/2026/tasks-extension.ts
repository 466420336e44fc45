import { isTerminal } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import { Task } from '@modelcontextprotocol/sdk/types.js';
import { Server, ServerContext } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { TaskOffer } from '../../methods/mcp-methods';
import { McpTasks } from '../../methods/tasks/mcp-tasks.service';
import { TaskCaller } from './task-caller';
import { capabilitiesOf } from './waiting-calls';

/** The Tasks extension of the 2026-07-28 revision (SEP-2663), as clients and servers name it in their capabilities. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

const TaskOf = z.looseObject({ taskId: z.string() });

/** Whether the client of this request declared the Tasks extension: only then may a call answer with a task. */
export function acceptsTasks(context: ServerContext): boolean {
  const { extensions } = capabilitiesOf(context) as { extensions?: Record<string, unknown> };
  return extensions?.[TASKS_EXTENSION] !== undefined;
}

/**
 * MCP tasks for 2026-07-28 clients, the Tasks extension: a long tool's `tools/call` answers at once
 * with a task (`resultType: "task"`), and the client polls `tasks/get` for its status and, once it
 * has ended, its result; `tasks/cancel` asks it to stop, `tasks/update` answers its questions.
 * The tasks are the method table's ({@link McpTasks}), the 2025 revisions' too: the same store
 * (Redis with `REDIS_URL`, so any replica answers), limits and owner, so another principal's task
 * is not found. What is here is the extension's wire: its methods and its words for a task.
 *
 * A task's call asks its client through the task: `input_required`, the questions in `tasks/get`,
 * the answers by `tasks/update` ({@link TaskCaller}).
 */
export class TasksExtension {
  constructor(private readonly tasks: McpTasks) {}

  /** The task a `tools/call` of a client that declared the extension becomes when its tool is a long one. */
  offer(principal: string, context: ServerContext, params: Record<string, unknown>): TaskOffer {
    const capabilities = capabilitiesOf(context);
    const store = this.tasks.ownedBy(principal);
    return {
      asked: false,
      store: this.tasks.starterFor(principal, { id: context.mcpReq.id, method: context.mcpReq.method, params }),
      callerOf: (taskId) => new TaskCaller(taskId, principal, store, this.tasks.inputs, capabilities),
      answer: (task) => ({ resultType: 'task', ...wireTask(task) }),
    };
  }

  /** Registers `tasks/get`, `tasks/update` and `tasks/cancel` on `server`, answering for `principal`'s tasks. */
  serve(server: Server, principal: string): void {
    const store = this.tasks.ownedBy(principal);
    const known = (taskId: string) => this.tasks.findTask(principal, taskId);
    server.setRequestHandler('tasks/get', { params: TaskOf }, async ({ taskId }) => {
      const task = await known(taskId);
      // A tool that failed is a completed call whose result says so (`isError`); `failed` is for protocol errors.
      if (task.status === 'completed' || task.status === 'failed') return { ...wireTask(task), status: 'completed', result: await store.getTaskResult(taskId) };
      if (task.status === 'input_required') return { ...wireTask(task), inputRequests: await this.tasks.inputs.questions(taskId, principal) };
      return wireTask(task);
    });
    // The SDK lifts `inputResponses` out of the params, to `context.mcpReq.inputResponses`.
    server.setRequestHandler('tasks/update', { params: TaskOf }, async ({ taskId }, context) => {
      await known(taskId);
      await this.tasks.inputs.answer(taskId, principal, context.mcpReq.inputResponses ?? {});
      return {};
    });
    server.setRequestHandler('tasks/cancel', { params: TaskOf }, async ({ taskId }) => {
      const task = await known(taskId);
      if (!isTerminal(task.status)) await store.updateTaskStatus(taskId, 'cancelled', 'Cancelled by the client');
      return {};
    });
  }
}

/** A stored task in the extension's words: `ttlMs` and `pollIntervalMs` for the store's `ttl` and `pollInterval`. */
function wireTask(task: Task): Record<string, unknown> {
  const { ttl, pollInterval, ...rest } = task;
  return { ...rest, ttlMs: ttl ?? null, ...(pollInterval !== undefined && { pollIntervalMs: pollInterval }) };
}
