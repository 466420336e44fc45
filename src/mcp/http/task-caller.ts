import type { TaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { ToolCaller } from '../../core/tools/tool-definition';
import { CLIENT_QUESTIONS, keyForQuestion, QuestionMethod, questionRefusal } from '../mcp-tool-caller';
import { POLL_INTERVAL_MS } from '../tasks/mcp-tasks.service';
import type { TaskInputs } from '../tasks/task-inputs';

interface OpenQuestion {
  method: QuestionMethod;
  resolve(answer: Record<string, unknown>): void;
}

/**
 * The client of a 2026 task's call, asked through the task (the Tasks extension): a question
 * opens in the task's inputs and the task turns `input_required`, so `tasks/get` shows it on any
 * instance; the client's `tasks/update` leaves the answer there, and this instance, polling while
 * a question is open, takes it to the caller. With no question left open the task is `working`
 * again. Questions need the capability the client declared when it started the task, and go
 * under the upstream's own keys when those are free, as a waiting call's do.
 */
export class TaskCaller implements ToolCaller {
  private readonly open = new Map<string, OpenQuestion>();
  private asked = 0;
  private polling?: NodeJS.Timeout;

  constructor(
    private readonly taskId: string,
    private readonly owner: string,
    private readonly store: TaskStore,
    private readonly inputs: TaskInputs,
    private readonly capabilities: Record<string, unknown>,
  ) {}

  declaredCapabilities(): Record<string, unknown> {
    return this.capabilities;
  }

  async request(method: string, params: Record<string, unknown> | undefined, signal: AbortSignal, named?: string): Promise<Record<string, unknown>> {
    const refusal = questionRefusal(method, this.capabilities);
    if (refusal) throw refusal;
    const key = keyForQuestion(
      method as QuestionMethod,
      named,
      (taken) => this.open.has(taken),
      () => ++this.asked,
    );
    await this.inputs.setQuestion(this.taskId, this.owner, key, { method, params });
    const answer = new Promise<Record<string, unknown>>((resolve, reject) => {
      this.open.set(key, { method: method as QuestionMethod, resolve });
      signal.addEventListener(
        'abort',
        () => {
          if (!this.open.delete(key)) return;
          void this.closed(key);
          reject(signal.reason ?? new McpError(ErrorCode.RequestTimeout, `${method} was withdrawn`));
        },
        { once: true },
      );
    });
    await this.setStatus('input_required');
    this.polling ??= setInterval(() => void this.takeAnswers().catch(() => undefined), POLL_INTERVAL_MS);
    this.polling.unref();
    return answer;
  }

  /** Hands the answers given so far to their questions; an answer that is not one is dropped and its question stays open. */
  private async takeAnswers(): Promise<void> {
    const answers = await this.inputs.takeAnswers(this.taskId, this.owner, [...this.open.keys()]);
    for (const [key, value] of Object.entries(answers)) {
      const question = this.open.get(key);
      if (!question) continue;
      const parsed = CLIENT_QUESTIONS[question.method].result.safeParse(value);
      if (!parsed.success) continue;
      this.open.delete(key);
      await this.closed(key);
      question.resolve(parsed.data as Record<string, unknown>);
    }
  }

  /** Closes question `key`; with none left open, the task is working again and polling stops. */
  private async closed(key: string): Promise<void> {
    await this.inputs.setQuestion(this.taskId, this.owner, key, undefined).catch(() => undefined);
    if (this.open.size > 0) return;
    clearInterval(this.polling);
    this.polling = undefined;
    await this.setStatus('working');
  }

  /** The task's status, unless it has ended meanwhile (a terminal status never changes). */
  private async setStatus(status: 'working' | 'input_required'): Promise<void> {
    await this.store.updateTaskStatus(this.taskId, status).catch(() => undefined);
  }
}
