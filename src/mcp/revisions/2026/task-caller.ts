import type { TaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import { PendingReplies } from '../../../core/requests/pending-replies';
import type { ToolCaller } from '../../../core/tools/tool-definition';
import { keyForQuestion, parsedAnswer, QuestionMethod, questionRefusal } from '../../methods/client-questions';
import { POLL_INTERVAL_MS } from '../../methods/tasks/mcp-tasks.service';
import type { TaskInputs } from '../../methods/tasks/task-inputs';

/**
 * The client of a 2026 task's call, asked through the task (the Tasks extension): a question
 * opens in the task's inputs and the task turns `input_required`, so `tasks/get` shows it on any
 * instance; the client's `tasks/update` leaves the answer there, and this instance, polling while
 * a question is open, takes it to the caller. With no question left open the task is `working`
 * again. Questions need the capability the client declared when it started the task, and go
 * under the upstream's own keys when those are free, as a waiting call's do. A question the
 * caller withdraws is closed in the task's inputs too.
 */
export class TaskCaller implements ToolCaller {
  /** The open questions, by key, waiting for the client's answers. */
  private readonly open = new PendingReplies<Record<string, unknown>, QuestionMethod>();
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
    const question = method as QuestionMethod;
    const key = keyForQuestion(
      question,
      named,
      (taken) => this.open.has(taken),
      () => ++this.asked,
    );
    const answer = this.open.request(() => undefined, { id: key, tag: question, signal, withdraw: () => void this.closed(key) });
    // Withdrawn while the question is written: the caller hears it from the promise returned below, and the question is closed.
    answer.catch(() => undefined);
    await this.inputs.setQuestion(this.taskId, this.owner, key, { method, params });
    if (this.open.has(key)) await this.setStatus('input_required');
    if (this.open.has(key)) {
      this.polling ??= setInterval(() => void this.takeAnswers().catch(() => undefined), POLL_INTERVAL_MS);
      this.polling.unref();
    }
    return answer;
  }

  /** Hands the answers given so far to their questions; an answer that is not one is dropped and its question stays open. */
  private async takeAnswers(): Promise<void> {
    const keys = [...this.open.entries()].map(([key]) => key);
    const answers = await this.inputs.takeAnswers(this.taskId, this.owner, keys);
    for (const [key, value] of Object.entries(answers)) {
      const method = this.open.tagOf(key);
      if (!method) continue;
      const parsed = parsedAnswer(method, value);
      if (!parsed.success) continue;
      await this.closed(key);
      this.open.settle(key, parsed.data as Record<string, unknown>);
    }
  }

  /** Closes question `key` in the task's inputs; with no other question open, the task is working again and polling stops. */
  private async closed(key: string): Promise<void> {
    await this.inputs.setQuestion(this.taskId, this.owner, key, undefined).catch(() => undefined);
    if (this.open.size > (this.open.has(key) ? 1 : 0)) return;
    clearInterval(this.polling);
    this.polling = undefined;
    await this.setStatus('working');
  }

  /** The task's status, unless it has ended meanwhile (a terminal status never changes). */
  private async setStatus(status: 'working' | 'input_required'): Promise<void> {
    await this.store.updateTaskStatus(this.taskId, status).catch(() => undefined);
  }
}
