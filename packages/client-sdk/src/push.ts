import type { LlmServerFrame, TurnToolCall } from './protocol/index.js';

/**
 * What the gateway adds to the frames of speech nobody asked for. Declared here, not taken from
 * the server's wire contract, so that the client compiles whether or not that contract names
 * them yet.
 */
export interface PushFields {
  /** `"push"` on every frame of a push: a sentence to say, or a turn the gateway ran for the device. */
  origin?: 'push';
  /** On a pushed final `llm_response`, when a reminder fell due. */
  reminder_id?: string;
}

/** A pushed answer, ready to speak: no `sendText` of this client asked for it. */
export interface PushedAnswer {
  /** The push's own turn id (`push-...`); never one of this client's turns. */
  turnId: string;
  content: string;
  /** The reminder that fell due, when a reminder made the push. */
  reminderId?: string;
  /**
   * The sentences of a streamed pushed turn, each already reported by a `pushSentence` event.
   * Empty when the push came whole (a sentence to say, or streaming off): speak `content` then.
   */
  sentences: string[];
  toolCalls: TurnToolCall[];
}

/** A sentence of a pushed turn, ready to speak (streaming on), like `sentence` for this client's own turns. */
export interface PushSentence {
  turnId: string;
  content: string;
  seq: number;
}

/** Whether `frame` belongs to a push rather than to anything this client sent. */
export function isPush(frame: LlmServerFrame): boolean {
  return (frame as LlmServerFrame & PushFields).origin === 'push';
}

/** Pushed turns followed at once; past it the oldest is forgotten, so a gateway that never ends its pushes cannot grow this. */
const MAX_OPEN_PUSHES = 32;

interface OpenPush {
  sentences: string[];
  answered: boolean;
}

/**
 * Follows the pushes by their turn ids, apart from the client's own requests, and tells what
 * each frame means: a sentence, the answer (its first final `llm_response`, as for a turn of
 * the client's own), or the push's end (`status idle`).
 */
export class PushTracker {
  private readonly open = new Map<string, OpenPush>();

  constructor(
    private readonly report: {
      sentence(sentence: PushSentence): void;
      answer(answer: PushedAnswer): void;
      ended(turnId: string): void;
    },
  ) {}

  offer(frame: LlmServerFrame): void {
    const turnId = ('turn_id' in frame && frame.turn_id) || '';
    if (frame.type === 'status' && frame.status === 'idle') {
      this.open.delete(turnId);
      this.report.ended(turnId);
      return;
    }
    if (frame.type !== 'llm_response') return;
    const push = this.follow(turnId);
    if (frame.is_final === false) {
      push.sentences.push(frame.content);
      this.report.sentence({ turnId, content: frame.content, seq: frame.seq ?? push.sentences.length - 1 });
      return;
    }
    if (push.answered) return;
    push.answered = true;
    const reminderId = (frame as LlmServerFrame & PushFields).reminder_id;
    this.report.answer({
      turnId,
      content: frame.content,
      ...(typeof reminderId === 'string' && { reminderId }),
      sentences: [...push.sentences],
      toolCalls: frame.tool_calls ?? [],
    });
  }

  /** Forgets every push: the connection that carried them is gone. */
  clear(): void {
    this.open.clear();
  }

  private follow(turnId: string): OpenPush {
    let push = this.open.get(turnId);
    if (!push) {
      if (this.open.size >= MAX_OPEN_PUSHES) this.open.delete(this.open.keys().next().value!);
      this.open.set(turnId, (push = { sentences: [], answered: false }));
    }
    return push;
  }
}
