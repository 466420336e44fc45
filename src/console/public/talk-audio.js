/**
 * The Talk view's audio, on the browser's own Opus (WebCodecs) and Web Audio: no WASM codec,
 * which the console's Content-Security-Policy would have to let run.
 *
 * @typedef {{sampleRate: number, channels: number, frameDurationMs: number}} OpusFormat
 */

/**
 * What the page sends, as its hello says: what the firmware sends (16 kHz mono Opus in 60 ms
 * packets), 16 kHz being the rate the gateway hears speech at.
 * @type {Readonly<OpusFormat>}
 */
export const MICROPHONE_FORMAT = Object.freeze({ sampleRate: 16000, channels: 1, frameDurationMs: 60 });

/**
 * How far ahead of now audio is scheduled when nothing is left to play: the gateway sends
 * packets at the pace they play, so without this margin every packet late by a little would
 * follow a gap.
 */
const PLAYBACK_LEAD_S = 0.12;

/** Why this page cannot talk, or `undefined` when it can. */
export function browserAudioProblem() {
  if (!window.isSecureContext) {
    return 'Browsers give the microphone and their Opus codec (WebCodecs) to secure pages only: open the console over https, or at localhost.';
  }
  if (typeof AudioEncoder === 'undefined' || typeof AudioDecoder === 'undefined') {
    return 'This browser has no WebCodecs audio (AudioEncoder, AudioDecoder), which the page encodes and plays Opus with: use one that has it, such as a recent Chromium.';
  }
  if (!navigator.mediaDevices?.getUserMedia) return 'This browser gives the page no microphone (navigator.mediaDevices).';
  return undefined;
}

/** The microphone, as the firmware sends it: Opus packets of {@link MICROPHONE_FORMAT}, one at a time as they are encoded. */
export class OpusMicrophone {
  /** @param {(packet: Uint8Array) => void} onPacket @param {(error: Error) => void} onError after a successful start */
  constructor(onPacket, onError) {
    this.onPacket = onPacket;
    this.onError = onError;
    /** @type {MediaStream | undefined} */
    this.stream = undefined;
    /** @type {AudioContext | undefined} */
    this.context = undefined;
    /** @type {AudioEncoder | undefined} */
    this.encoder = undefined;
  }

  /** Asks for the microphone and starts encoding; rejects with why it cannot (permission refused, no codec). */
  async start() {
    const { sampleRate, channels, frameDurationMs } = MICROPHONE_FORMAT;
    /** @type {AudioEncoderConfig} */
    const config = { codec: 'opus', sampleRate, numberOfChannels: channels, opus: { frameDuration: frameDurationMs * 1000, format: 'opus' } };
    if (!(await AudioEncoder.isConfigSupported(config)).supported) {
      throw new Error(`This browser cannot encode ${sampleRate} Hz mono Opus in ${frameDurationMs} ms packets (AudioEncoder)`);
    }
    const stream = await navigator.mediaDevices.getUserMedia({
      audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true, autoGainControl: true },
    });
    this.stream = stream;
    try {
      // Web Audio resamples the microphone to its context's rate: the encoder gets 16 kHz whatever the device records at.
      const context = new AudioContext({ sampleRate });
      this.context = context;
      await context.audioWorklet.addModule(new URL('./talk-microphone-worklet.js', import.meta.url));
      const encoder = new AudioEncoder({
        output: (chunk) => {
          const packet = new Uint8Array(chunk.byteLength);
          chunk.copyTo(packet);
          this.onPacket(packet);
        },
        error: (error) => this.onError(error),
      });
      encoder.configure(config);
      this.encoder = encoder;
      const framer = new AudioWorkletNode(context, 'talk-packet-framer', {
        numberOfInputs: 1,
        numberOfOutputs: 1,
        channelCount: 1,
        channelCountMode: 'explicit',
        processorOptions: { frameSamples: (sampleRate * frameDurationMs) / 1000 },
      });
      let encodedSamples = 0;
      framer.port.onmessage = (/** @type {MessageEvent<Float32Array>} */ { data }) => {
        if (encoder.state !== 'configured') return;
        const timestamp = Math.round((encodedSamples * 1e6) / sampleRate);
        encodedSamples += data.length;
        const audio = new AudioData({ format: 'f32-planar', sampleRate, numberOfFrames: data.length, numberOfChannels: 1, timestamp, data });
        encoder.encode(audio);
        audio.close();
      };
      context.createMediaStreamSource(stream).connect(framer);
      // Web Audio runs only the nodes the speakers pull on: the framer's output, silence, is what connects it.
      framer.connect(context.destination);
      for (const track of stream.getAudioTracks()) track.addEventListener('ended', () => this.onError(new Error('the microphone went away')));
      await context.resume();
    } catch (error) {
      this.stop();
      throw error;
    }
  }

  /** Lets the microphone go (the browser's recording indicator goes off); what was not encoded yet is dropped. */
  stop() {
    this.stream?.getTracks().forEach((track) => track.stop());
    void this.context?.close();
    if (this.encoder && this.encoder.state !== 'closed') this.encoder.close();
    this.stream = undefined;
    this.context = undefined;
    this.encoder = undefined;
  }
}

/**
 * Plays the Opus packets the gateway sends, in the format its hello gave, back to back as they
 * are decoded: each packet is scheduled to start where the one before ends.
 */
export class OpusSpeaker {
  /**
   * @param {OpusFormat} format the server hello's `audio_params`
   * @param {(seconds: number) => void} onPlayed after each packet is scheduled, with its length
   * @param {(error: Error) => void} onError
   */
  constructor(format, onPlayed, onError) {
    this.format = format;
    this.onPlayed = onPlayed;
    /** Where on the context's clock the audio scheduled so far ends. */
    this.playsUntil = 0;
    this.timestamp = 0;
    /** @type {Set<AudioBufferSourceNode>} */
    this.sources = new Set();
    // Created after the click that connected the page, so the browser lets it play.
    this.context = new AudioContext();
    this.decoder = new AudioDecoder({ output: (data) => this.schedule(data), error: onError });
    try {
      this.configure();
    } catch (error) {
      this.decoder.close();
      void this.context.close();
      throw error;
    }
  }

  /** Resumes playing if the browser suspended it; call it from a click, which is what lets it. */
  resume() {
    return this.context.resume();
  }

  /** One packet of the gateway's audio. @param {Uint8Array} packet */
  play(packet) {
    if (this.decoder.state !== 'configured') return;
    const duration = this.format.frameDurationMs * 1000;
    this.decoder.decode(new EncodedAudioChunk({ type: 'key', timestamp: this.timestamp, duration, data: packet }));
    this.timestamp += duration;
  }

  /** Silences what is playing and drops what waits to be decoded: an abort is heard at once. */
  stop() {
    if (this.decoder.state !== 'closed') {
      this.decoder.reset();
      this.configure();
    }
    for (const source of this.sources) source.stop();
    this.sources.clear();
    this.playsUntil = 0;
  }

  close() {
    this.stop();
    if (this.decoder.state !== 'closed') this.decoder.close();
    void this.context.close();
  }

  /** @private */
  configure() {
    this.decoder.configure({ codec: 'opus', sampleRate: this.format.sampleRate, numberOfChannels: this.format.channels });
  }

  /** @private @param {AudioData} data */
  schedule(data) {
    const buffer = this.context.createBuffer(data.numberOfChannels, data.numberOfFrames, data.sampleRate);
    for (let channel = 0; channel < data.numberOfChannels; channel++) {
      data.copyTo(buffer.getChannelData(channel), { planeIndex: channel, format: 'f32-planar' });
    }
    data.close();
    const source = this.context.createBufferSource();
    source.buffer = buffer;
    source.connect(this.context.destination);
    const now = this.context.currentTime;
    const startsAt = this.playsUntil > now ? this.playsUntil : now + PLAYBACK_LEAD_S;
    source.start(startsAt);
    this.playsUntil = startsAt + buffer.duration;
    this.sources.add(source);
    source.addEventListener('ended', () => this.sources.delete(source));
    this.onPlayed(buffer.duration);
  }
}
