/** A question a task puts to its client: an elicitation or sampling request, as the 2026 revision embeds it. */
export interface TaskQuestion {
  method: string;
  params?: Record<string, unknown>;
}

/**
 * What a running task asks its client and what the client answers (the Tasks extension's
 * `inputRequests` in `tasks/get` and `inputResponses` in `tasks/update`), kept beside the task in
 * its store: the instance that runs the task asks and takes the answers; any instance shows the
 * questions and takes the answers in. Every method acts for `owner` only: another owner's task
 * has no questions and takes no answers.
 */
export interface TaskInputs {
  /** Opens the question `key` of the task, or closes it (`undefined`), with any answer left for it. */
  setQuestion(taskId: string, owner: string, key: string, question: TaskQuestion | undefined): Promise<void>;
  /** The task's open questions, by key. */
  questions(taskId: string, owner: string): Promise<Record<string, TaskQuestion>>;
  /** Keeps the answers to open questions; answers to any other key are dropped, as the extension says. */
  answer(taskId: string, owner: string, answers: Record<string, unknown>): Promise<void>;
  /** The answers given to the questions `keys` and not taken yet, taken. */
  takeAnswers(taskId: string, owner: string, keys: string[]): Promise<Record<string, unknown>>;
}

/** {@link TaskInputs} of one instance (no `REDIS_URL`), where every task runs. */
export class MemoryTaskInputs implements TaskInputs {
  private readonly tasks = new Map<string, { questions: Map<string, TaskQuestion>; answers: Map<string, unknown> }>();

  async setQuestion(taskId: string, owner: string, key: string, question: TaskQuestion | undefined): Promise<void> {
    const id = `${owner}\0${taskId}`;
    const task = this.tasks.get(id) ?? { questions: new Map(), answers: new Map() };
    task.answers.delete(key);
    if (question) task.questions.set(key, question);
    else task.questions.delete(key);
    if (task.questions.size === 0) this.tasks.delete(id);
    else this.tasks.set(id, task);
  }

  async questions(taskId: string, owner: string): Promise<Record<string, TaskQuestion>> {
    return Object.fromEntries(this.tasks.get(`${owner}\0${taskId}`)?.questions ?? []);
  }

  async answer(taskId: string, owner: string, answers: Record<string, unknown>): Promise<void> {
    const task = this.tasks.get(`${owner}\0${taskId}`);
    if (!task) return;
    for (const [key, answer] of Object.entries(answers)) if (task.questions.has(key)) task.answers.set(key, answer);
  }

  async takeAnswers(taskId: string, owner: string, keys: string[]): Promise<Record<string, unknown>> {
    const task = this.tasks.get(`${owner}\0${taskId}`);
    const taken: Record<string, unknown> = {};
    for (const key of keys) {
      if (!task?.answers.has(key)) continue;
      taken[key] = task.answers.get(key);
      task.answers.delete(key);
    }
    return taken;
  }
}
