import { OpusEncoder } from '../audio/opus-encoder';
import { OpusFormat } from '../audio/opus-format';
import { PacedSender } from '../audio/paced-sender';
import { PcmFramer } from '../audio/pcm-framer';
import { Resampler } from '../audio/resampler';
import type { SpeechSynthesizer, SynthesizedSpeech } from '../speech-engines/speech-engine';
import type { SentenceReport, VoiceOutputEvent, VoiceOutputSummary } from './voice-output-event';

export interface VoiceOutputOptions {
  /** The audio the device plays, from the server's hello: its rate and frame duration. */
  format: OpusFormat;
  synthesizer: SpeechSynthesizer;
  /** Hands one Opus packet to the connection. */
  send: (packet: Uint8Array) => void;
  onEvent: (event: VoiceOutputEvent) => void;
  voice?: string;
  language?: string;
  /** Frames the device may hold ahead of what it plays (see `PacedSender`). */
  leadFrames?: number;
  /** How long an answer's first frame waits after {@link VoiceOutput.begin} (see `PacedSender`). */
  firstFrameDelayMs?: number;
  /** Milliseconds from any fixed origin, for pacing; tests pass a fake clock. */
  now?: () => number;
}

interface Sentence {
  text: string;
  speech?: Promise<SynthesizedSpeech>;
  framesQueued: number;
  framesSent: number;
  /** All its audio has been queued. */
  complete: boolean;
}

interface OutgoingFrame {
  packet: Uint8Array;
  sentence: Sentence;
  first: boolean;
}

/** One answer being spoken: its sentences, its pacing, its synthesis requests. */
interface Answer {
  sentences: Sentence[];
  paced: PacedSender<OutgoingFrame>;
  synthesis: AbortController;
  playing: number;
  ended: boolean;
  aborted: boolean;
  over: boolean;
  wake?: () => void;
}

/**
 * One device connection's speaker, protocol-neutral: an answer's sentences in, as the model
 * writes them; Opus frames out at the pace the device plays them. Each sentence is synthesized
 * while the one before it plays, never more than one ahead (a barge-in would waste the rest),
 * resampled to the device's rate, cut into its frame duration (a sentence ends on a frame of its
 * own, padded with silence, so `sentence-start` falls between frames) and encoded.
 *
 * {@link abort} drops what is queued and ends the synthesis at once; its summary says which
 * sentences the device got, so the history keeps only what was spoken. Made on a connection's
 * first answer and kept for the next ones (one answer at a time); {@link close} frees the encoder
 * and resampler.
 */
export class VoiceOutput {
  private readonly encoder: OpusEncoder;
  private readonly framer: PcmFramer;
  private resampler: Resampler | undefined;
  private answer: Answer | undefined;
  private answerFinished: Promise<VoiceOutputSummary> = Promise.resolve({ outcome: 'played', sentences: [] });
  private closed = false;

  constructor(private readonly options: VoiceOutputOptions) {
    this.encoder = new OpusEncoder(options.format);
    this.framer = new PcmFramer(this.encoder.frameSamples);
  }

  /** Settles when the current answer's speech is over (never rejects); at once when there is none. */
  get finished(): Promise<VoiceOutputSummary> {
    return this.answerFinished;
  }

  /** Starts an answer. The previous one must be over: awaited, or aborted and awaited. */
  begin(): void {
    if (this.closed) throw new Error('VoiceOutput.begin after close()');
    if (this.answer && !this.answer.over) throw new Error('VoiceOutput.begin while an answer is still playing');
    const paced = new PacedSender<OutgoingFrame>({
      frameMs: this.options.format.frameDurationMs,
      send: (frame) => this.sendFrame(frame),
      ...(this.options.leadFrames === undefined ? {} : { leadFrames: this.options.leadFrames }),
      ...(this.options.now ? { now: this.options.now } : {}),
      firstFrameDelayMs: this.options.firstFrameDelayMs,
    });
    const answer: Answer = { sentences: [], paced, synthesis: new AbortController(), playing: -1, ended: false, aborted: false, over: false };
    this.answer = answer;
    this.answerFinished = this.run(answer);
  }

  /** Adds the answer's next sentence. */
  say(text: string): void {
    const answer = this.openAnswer('say');
    answer.sentences.push({ text, framesQueued: 0, framesSent: 0, complete: false });
    if (answer.playing >= 0 && answer.sentences.length - 1 === answer.playing + 1) this.startSynthesis(answer, answer.playing + 1);
    wakeUp(answer);
  }

  /** No more sentences: `stopped` follows the last one's last frame. */
  end(): void {
    this.openAnswer('end').ended = true;
    wakeUp(this.answer as Answer);
  }

  /** Stops the answer now: no frame is sent after this, its synthesis requests end, and the summary says what was spoken. */
  abort(): Promise<VoiceOutputSummary> {
    const answer = this.answer;
    if (answer && !answer.aborted) {
      answer.aborted = true;
      answer.paced.abort();
      answer.synthesis.abort(new Error('The answer was aborted'));
      wakeUp(answer);
    }
    return this.finished;
  }

  /** What of the current answer has been sent so far, sentence by sentence; after {@link abort}, what the device got. */
  report(): SentenceReport[] {
    return this.answer ? this.answer.sentences.map(reportOf) : [];
  }

  /** Aborts what is still playing and frees the encoder and resampler. */
  async close(): Promise<void> {
    this.closed = true;
    await this.abort();
    this.encoder.free();
    this.dropResampler();
  }

  private openAnswer(call: string): Answer {
    if (!this.answer || this.answer.ended) throw new Error(`VoiceOutput.${call} without an open answer: call begin() first`);
    return this.answer;
  }

  private async run(answer: Answer): Promise<VoiceOutputSummary> {
    let error: Error | undefined;
    try {
      for (let index = 0; ; index += 1) {
        const sentence = await sentenceAt(answer, index);
        if (!sentence) break;
        answer.playing = index;
        this.startSynthesis(answer, index);
        this.startSynthesis(answer, index + 1);
        await this.play(answer, sentence);
      }
    } catch (failure) {
      if (!answer.aborted) error = failure instanceof Error ? failure : new Error(String(failure));
    }
    answer.synthesis.abort(new Error('The answer is over'));
    if (answer.aborted || error) this.restartAudio();
    answer.paced.end();
    const sent = await answer.paced.finished;
    answer.over = true;
    const summary: VoiceOutputSummary = {
      outcome: error ? 'failed' : sent === 'aborted' ? 'aborted' : 'played',
      sentences: answer.sentences.map(reportOf),
      ...(error ? { error } : {}),
    };
    this.options.onEvent({ type: 'stopped', ...summary });
    return summary;
  }

  private async play(answer: Answer, sentence: Sentence): Promise<void> {
    const speech = await (sentence.speech as Promise<SynthesizedSpeech>);
    const resampler = await this.resamplerFrom(speech.sampleRate);
    for await (const chunk of speech.chunks) {
      if (answer.aborted) return;
      await this.queue(answer, sentence, this.framer.push(resampler.push(chunk)));
    }
    if (answer.aborted) return;
    await this.queue(answer, sentence, this.framer.push(resampler.flush()));
    const tail = this.framer.flush();
    if (tail) await this.queue(answer, sentence, [tail]);
    sentence.complete = true;
  }

  private async queue(answer: Answer, sentence: Sentence, frames: Int16Array[]): Promise<void> {
    for (const frame of frames) {
      if (answer.aborted) return;
      const first = sentence.framesQueued === 0;
      sentence.framesQueued += 1;
      await answer.paced.enqueue({ packet: this.encoder.encode(frame), sentence, first });
    }
  }

  private sendFrame({ packet, sentence, first }: OutgoingFrame): void {
    if (first) this.options.onEvent({ type: 'sentence-start', text: sentence.text });
    sentence.framesSent += 1;
    this.options.send(packet);
  }

  private startSynthesis(answer: Answer, index: number): void {
    const sentence = answer.sentences[index];
    if (!sentence || sentence.speech || answer.aborted) return;
    const { voice, language } = this.options;
    sentence.speech = this.options.synthesizer.synthesize(sentence.text, {
      signal: answer.synthesis.signal,
      ...(voice ? { voice } : {}),
      ...(language ? { language } : {}),
    });
    sentence.speech.catch(() => undefined);
  }

  /** A resampler from `rate` to the device's, kept while sentences come at the same rate (a WAV answer may change it). */
  private async resamplerFrom(rate: number): Promise<Resampler> {
    if (this.resampler?.fromRate !== rate) {
      this.dropResampler();
      this.resampler = await Resampler.open(rate, this.options.format.sampleRate);
    }
    return this.resampler;
  }

  /** Forgets audio of a sentence cut short, so the next answer does not begin with its remains. */
  private restartAudio(): void {
    this.framer.flush();
    this.dropResampler();
  }

  private dropResampler(): void {
    this.resampler?.free();
    this.resampler = undefined;
  }
}

/** The sentence at `index` once it is said, or nothing once the answer is over or aborted. */
async function sentenceAt(answer: Answer, index: number): Promise<Sentence | undefined> {
  while (index >= answer.sentences.length && !answer.ended && !answer.aborted) await new Promise<void>((resolve) => (answer.wake = resolve));
  return answer.aborted ? undefined : answer.sentences[index];
}

function wakeUp(answer: Answer): void {
  const wake = answer.wake;
  answer.wake = undefined;
  wake?.();
}

function reportOf(sentence: Sentence): SentenceReport {
  const spoken = sentence.framesSent === 0 ? 'unspoken' : sentence.complete && sentence.framesSent === sentence.framesQueued ? 'spoken' : 'partly';
  return { text: sentence.text, spoken };
}
