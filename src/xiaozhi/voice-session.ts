import { Logger } from '@nestjs/common';
import { Observable, tap } from 'rxjs';
import type { OpusFormat } from '../assistant/audio/opus-format';
import { meteredRecognizer, meteredSynthesizer, SpeechMeter } from '../assistant/speech-engines/metered-speech';
import type { SpeechRecognizer, SpeechSynthesizer } from '../assistant/speech-engines/speech-engine';
import type { ListeningMode, VoiceInputEvent } from '../assistant/voice/voice-input-event';
import { VoiceInput, VoiceInputCounters, VoiceInputSettings } from '../assistant/voice/voice-input';
import type { VoiceOutputEvent } from '../assistant/voice/voice-output-event';
import { VoiceOutput } from '../assistant/voice/voice-output';
import type { LlmServerFrame } from '../llm-gateway/protocol';
import { cleanedTurn } from '../llm-gateway/speech-cleaning.interceptor';
import type { Turn } from '../llm-gateway/turn';
import type { TurnStarter } from '../llm-gateway/turn-starter';
import type { VoiceEvent } from '../metrics/metrics.service';
import { BudgetExceededError } from '../core/budgets/budget-exceeded.error';
import type { BudgetService } from '../core/budgets/budget.service';
import { PUSH_CUT, type PushEnd } from '../fleet/device-link';
import { emotionOf, NEUTRAL } from './emotions';
import { frame } from './audio-framing';
import { audioTransportOf } from './audio-transport';
import type { XiaozhiConnection } from './xiaozhi-connection';
import type { XiaozhiServerMessage } from './xiaozhi-messages';

/** What a voice session works with, shared by every session of the instance. */
export interface VoiceSessionContext {
  turns: TurnStarter;
  /** `null` while recognition is off (`STT_BASE_URL` unset): audio is refused with an alert. */
  recognizer: SpeechRecognizer | null;
  /** `null` while synthesis is off (`TTS_BASE_URL` unset): answers are shown, not spoken. */
  synthesizer: SpeechSynthesizer | null;
  settings: VoiceInputSettings;
  /** The device's and its principal's budgets, spent before each recognition and synthesis. */
  budgets: BudgetService;
  count(event: VoiceEvent): void;
}

/** A message without its `session_id`, which the session adds. */
type Unaddressed<T> = T extends unknown ? Omit<T, 'session_id'> : never;

/** How a push's or a turn's speech ends up: whether it reached the device. */
interface SpeechStart {
  started: Promise<void>;
}

/** Which of the {@link VoiceInputCounters} are reported as which event. */
const DROPPED: [keyof VoiceInputCounters, VoiceEvent][] = [
  ['undecodable', 'audio_undecodable'],
  ['overBudget', 'audio_over_budget'],
];

/**
 * One answer said aloud: `tts start`, then each sentence (`sentence_start` just before its first
 * audio frame, or alone when synthesis is off), then `tts stop` once its last frame is sent or
 * its speech was cut. Ends once, whatever ends it, and says how: spoken only when its paced audio
 * ended normally and `tts stop` went out.
 */
class SpokenAnswer {
  private ended?: Promise<PushEnd>;
  /** Why it was cut, when it was. */
  private cutFor?: string;

  constructor(
    private readonly session: VoiceSession,
    private readonly output: VoiceOutput | undefined,
    /** The turn it answers; `undefined` for a pushed sentence. */
    readonly turn: Turn | undefined,
  ) {
    session.send({ type: 'tts', state: 'start' });
    output?.begin();
  }

  say(sentence: string): void {
    if (this.ended) return;
    if (this.output) this.output.say(sentence);
    else this.session.send({ type: 'tts', state: 'sentence_start', text: sentence });
  }

  /** No more sentences: resolves once the last is sent (or cut), after `tts stop`, with how it ended. */
  finish(): Promise<PushEnd> {
    return (this.ended ??= this.stop(() => this.output?.end()));
  }

  /** Stops now, whether or not its last sentence was said: nothing more is sent but `tts stop`; the text the device got, for the history. */
  cut(reason: string): string {
    this.cutFor ??= reason;
    void this.output?.abort();
    this.ended ??= this.stop(() => undefined);
    return (this.output?.report() ?? [])
      .filter((sentence) => sentence.spoken !== 'unspoken')
      .map((sentence) => sentence.text)
      .join(' ');
  }

  private async stop(end: () => void): Promise<PushEnd> {
    end();
    const summary = await this.output?.finished;
    if (summary?.outcome === 'played' && this.cutFor === undefined) await this.session.audioSettled();
    const stopped = this.session.send({ type: 'tts', state: 'stop' });
    this.session.answerOver(this);
    if (this.cutFor !== undefined) return { state: 'interrupted', reason: this.cutFor };
    // Aborted without a cut: the session closed under it.
    if (!stopped || summary?.outcome === 'aborted') return { state: 'interrupted', reason: PUSH_CUT.disconnected };
    if (summary?.outcome === 'failed') return { state: 'interrupted', reason: PUSH_CUT.failed };
    return { state: 'spoken' };
  }
}

/**
 * A xiaozhi device's voice, once its hello has come: what it says is heard ({@link VoiceInput}:
 * Opus, Silero VAD, the recognizer), becomes a turn of the LLM gateway's engine (its session,
 * tools, sentence streaming and cancel rules), and the turn's sentences are spoken back
 * ({@link VoiceOutput}: synthesis one sentence ahead, Opus, paced) between `tts start` and `tts
 * stop`. Pushed sentences are said the same way, in the connection's queue, after the turn in
 * flight.
 *
 * Listening follows the device: from `listen start` (in its mode) to `listen stop`, or in `auto`
 * mode until an utterance is heard, after which its audio is dropped until the answer's `tts
 * stop` (the firmware stops sending it then, but what is in flight still comes). In `realtime`
 * mode the user may talk over the answer: speech heard while a turn is in flight cuts it. An
 * `abort` cuts it too, within a frame, and the history keeps what was spoken.
 *
 * The decoder and detector are made on the first audio, the encoder on the first answer; all of
 * it is freed at {@link close}, with the recognition or synthesis in flight.
 */
export class VoiceSession {
  private readonly logger = new Logger('Xiaozhi');
  private mode?: ListeningMode;
  private input?: VoiceInput;
  private inputMode?: ListeningMode;
  private output?: VoiceOutput;
  private speaking?: SpokenAnswer;
  /** An utterance was heard in `auto` or `manual` mode: its answer is being prepared or said, and audio is not listened to. */
  private answering = false;
  private warnedNoRecognizer = false;
  private warnedNoSynthesizer = false;
  private closed = false;
  private readonly startedAt = performance.now();

  constructor(
    private readonly connection: XiaozhiConnection,
    private readonly context: VoiceSessionContext,
    /** The device's audio, from its hello. */
    private readonly inputFormat: OpusFormat,
    /** The audio it is sent, as the server hello says. */
    private readonly outputFormat: OpusFormat,
  ) {}

  /** Sends a message of the session, its `session_id` added. */
  send(message: Unaddressed<XiaozhiServerMessage>): boolean {
    return this.connection.send({ session_id: this.connection.state.helloSessionId, ...message });
  }

  /** Resolves once the audio sent last can no longer be overtaken by a message sent now: at once where both share one channel. */
  audioSettled(): Promise<void> {
    const skewMs = this.audioSkewMs;
    return skewMs > 0 ? new Promise((resolve) => setTimeout(resolve, skewMs)) : Promise.resolve();
  }

  /** `listen start`: the microphone is on, in `mode`. */
  listen(mode: ListeningMode): void {
    this.mode = mode;
    if (!this.speaking) this.answering = false;
  }

  /** `listen stop`: the utterance ends here (in manual mode, the only way it ends); false when nothing was listening (a stop without a start). */
  stopListening(): boolean {
    if (this.mode === undefined) return false;
    this.mode = undefined;
    if (this.input && !this.answering) {
      this.answering = true;
      void this.input.stop();
    }
    return true;
  }

  /** The wake word was heard (`listen detect`): whatever is being said stops, as the firmware's own abort asks. */
  wakeWord(): void {
    this.cutSpeech(PUSH_CUT.abort);
  }

  /** `abort`: stop speaking now; the turn is cancelled with what the device got as its answer. */
  abort(): void {
    this.cutSpeech(PUSH_CUT.abort);
  }

  /** One Opus packet from the device. */
  audio(packet: Uint8Array): void {
    if (this.mode === undefined) return this.context.count('audio_not_listening');
    // The tail an auto-mode device sends until `tts start` reaches it: expected, not counted.
    if (this.answering && this.mode !== 'realtime') return;
    const input = this.inputFor(this.mode);
    if (!input) return;
    const before = DROPPED.map(([counter]) => input.counters[counter]);
    input.push(packet).catch((error: Error) => this.logger.error(`Device ${this.deviceName}: audio analysis failed: ${error.stack}`));
    DROPPED.forEach(([counter, event], index) => {
      if (input.counters[counter] > before[index]) this.context.count(event);
    });
  }

  /** What a device's count of unreadable binary messages adds up to: one event each. */
  badFrame(problem: string): void {
    this.context.count('audio_bad_frame');
    this.logger.debug(`Device ${this.deviceName}: ${problem}`);
  }

  /**
   * Says `text` in its turn: after the turn in flight (or at once, with `interrupt`, which cuts
   * it). `started` settles once `tts start` went out, `finished` once `tts stop` did (or it was
   * never said), with how it ended.
   */
  say(text: string, interrupt: boolean): SpeechStart & { waiting: boolean; finished: Promise<PushEnd> } {
    if (interrupt) this.cutSpeech(PUSH_CUT.newerPush);
    const queue = this.connection.queue();
    const waiting = !queue.idle;
    let settle!: (sent: boolean) => void;
    const started = new Promise<void>((resolve, reject) => (settle = (sent) => (sent ? resolve() : reject(new Error('disconnected')))));
    let end!: (how: PushEnd) => void;
    const finished = new Promise<PushEnd>((resolve) => (end = resolve));
    const unsaid = () => {
      settle(false);
      end({ state: 'interrupted', reason: PUSH_CUT.disconnected });
    };
    queue
      .run(async () => {
        if (!this.connection.isOpen || this.closed) return unsaid();
        const answer = this.beginAnswer(undefined);
        settle(true);
        answer.say(text);
        end(await answer.finish());
      })
      .catch(unsaid);
    return { waiting, started, finished };
  }

  /**
   * A turn of the engine for what the user said (or a pushed turn): its sentences are spoken as
   * the model writes them, and it is answered once they have been.
   */
  startTurn(text: string, options: { turnId?: string; origin?: 'push'; ended?: (how: PushEnd) => void } = {}): Turn {
    let answer: SpokenAnswer | undefined;
    let failed = false;
    const turn: Turn = this.context.turns.start(
      this.connection,
      { type: 'text_input', text, ...(options.turnId !== undefined && { turn_id: options.turnId }) },
      { interrupt: false, origin: options.origin, untilSpoken: async () => void (await answer?.finish()) },
    );
    // The face is the first sentence's: its emoji's, or neutral (it is shown as the answer begins, not after it).
    let emotionSent = false;
    const raw: Observable<LlmServerFrame> = turn.frames.pipe(
      tap((frame) => {
        if (emotionSent || frame.type !== 'llm_response') return;
        emotionSent = true;
        this.send({ type: 'llm', ...(emotionOf(frame.content) ?? NEUTRAL) });
      }),
    );
    cleanedTurn(raw, this.connection).subscribe({
      next: (frame) => {
        if (frame.type === 'llm_response' && !frame.is_final && frame.content.trim() !== '') {
          answer ??= this.beginAnswer(turn);
          answer.say(frame.content.trim());
        } else if (frame.type === 'error') {
          failed = true;
          this.context.count('turn_failed');
          this.alert('error', frame.message, 'sad');
          void answer?.finish();
        }
      },
      complete: () => {
        if (answer) void answer.finish().then((how) => options.ended?.(failed ? { state: 'interrupted', reason: PUSH_CUT.failed } : how));
        else {
          this.answerOver(undefined);
          options.ended?.({ state: 'interrupted', reason: failed ? PUSH_CUT.failed : PUSH_CUT.cancelled });
        }
      },
    });
    return turn;
  }

  /** The answer `answer` is over (`tts stop` sent): the microphone is listened to again. */
  answerOver(answer: SpokenAnswer | undefined): void {
    if (answer && this.speaking !== answer) return;
    this.speaking = undefined;
    this.answering = false;
  }

  /** Frees the codec, detector and engines' requests; nothing is sent after it. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.input?.close();
    this.input = undefined;
    await this.output?.close();
    this.output = undefined;
  }

  /** How far audio and messages may overtake each other (`AudioTransport.audioSkewMs`); 0 on a WebSocket. */
  private get audioSkewMs(): number {
    return audioTransportOf(this.connection)?.audioSkewMs ?? 0;
  }

  private get deviceName(): string {
    return this.connection.state.deviceId ?? this.connection.id;
  }

  /** Recognition and synthesis spend the device's budgets (audio seconds, characters) before they run: a spent budget refuses them with BUDGET_EXCEEDED. */
  private get meter(): SpeechMeter {
    const { budgets } = this.context;
    const subject = () => ({ principal: this.connection.principal, deviceId: this.connection.state.deviceId });
    return {
      recognizing: (audioMs) => budgets.spend(subject(), 'stt_seconds', audioMs),
      synthesizing: (characters) => budgets.spend(subject(), 'tts_chars', characters),
    };
  }

  private alert(status: string, message: string, emotion: string): void {
    this.send({ type: 'alert', status, message, emotion });
  }

  private beginAnswer(turn: Turn | undefined): SpokenAnswer {
    const answer = new SpokenAnswer(this, this.outputFor(), turn);
    this.speaking = answer;
    return answer;
  }

  /** Stops what is being said (`reason`: why, for its receipt); the turn it answers is cancelled with what was spoken of it. */
  private cutSpeech(reason: string): void {
    const answer = this.speaking;
    if (!answer) {
      for (const turn of this.connection.state.turns.values()) turn.cancel('');
      return;
    }
    const spoken = answer.cut(reason);
    answer.turn?.cancel(spoken);
  }

  /** The input for `mode`, made on the first audio and again when the mode changes; `undefined` while recognition is off. */
  private inputFor(mode: ListeningMode): VoiceInput | undefined {
    const { recognizer } = this.context;
    if (!recognizer) {
      if (!this.warnedNoRecognizer) this.alert('error', 'Speech recognition is off on this gateway (STT_BASE_URL)', 'sad');
      this.warnedNoRecognizer = true;
      return undefined;
    }
    if (this.input && this.inputMode === mode) return this.input;
    this.input?.close();
    this.inputMode = mode;
    this.input = new VoiceInput({
      format: this.inputFormat,
      mode,
      recognizer: meteredRecognizer(recognizer, this.meter),
      settings: this.context.settings,
      onEvent: (event) => this.heard(event),
    });
    return this.input;
  }

  private outputFor(): VoiceOutput | undefined {
    const { synthesizer } = this.context;
    if (!synthesizer) {
      if (!this.warnedNoSynthesizer) this.alert('warning', 'Speech synthesis is off on this gateway (TTS_BASE_URL): answers are shown, not spoken', 'neutral');
      this.warnedNoSynthesizer = true;
      return undefined;
    }
    this.output ??= new VoiceOutput({
      format: this.outputFormat,
      synthesizer: meteredSynthesizer(synthesizer, this.meter),
      send: (packet) => this.connection.sendBinary(frame(this.connection.state.framing, packet, Math.round(performance.now() - this.startedAt))),
      onEvent: (event) => this.spoke(event),
      firstFrameDelayMs: this.audioSkewMs,
    });
    return this.output;
  }

  private heard(event: VoiceInputEvent): void {
    if (this.closed) return;
    switch (event.type) {
      case 'speech-start':
        if (this.mode === 'realtime' && (this.speaking || this.connection.state.turns.size > 0)) {
          this.context.count('barge_in');
          this.cutSpeech(PUSH_CUT.bargeIn);
        }
        return;
      case 'utterance-end':
        if (event.reason === 'max-length') this.context.count('utterance_max_length');
        if (this.mode !== 'realtime') this.answering = true;
        return;
      case 'empty':
        this.answerOver(undefined);
        return;
      case 'failed':
        if (event.error instanceof BudgetExceededError) {
          this.alert('error', event.error.message, 'sad');
          this.answerOver(undefined);
          return;
        }
        this.context.count('recognizer_failed');
        this.logger.warn(`Device ${this.deviceName}: speech recognition failed: ${event.error.message}`);
        this.alert('error', 'Speech recognition failed; please try again', 'sad');
        this.answerOver(undefined);
        return;
      case 'transcript':
        this.send({ type: 'stt', text: event.text });
        this.answerTranscript(event.text);
        return;
    }
  }

  /** What the user said: the answer to a question a turn asked aloud, or a new turn. */
  private answerTranscript(text: string): void {
    const { question } = this.connection.state;
    if (question) return question.answer(text);
    try {
      this.startTurn(text);
    } catch (error) {
      this.alert('error', (error as Error).message, 'sad');
      this.answerOver(undefined);
    }
  }

  private spoke(event: VoiceOutputEvent): void {
    if (event.type === 'sentence-start') {
      this.send({ type: 'tts', state: 'sentence_start', text: event.text });
    } else if (event.outcome === 'failed' && event.error instanceof BudgetExceededError) {
      this.alert('error', event.error.message, 'sad');
    } else if (event.outcome === 'failed') {
      this.context.count('synthesizer_failed');
      this.logger.warn(`Device ${this.deviceName}: speech synthesis failed: ${event.error?.message}`);
      this.alert('error', 'Speech synthesis failed', 'sad');
    }
  }
}
