import { execFile } from 'child_process';

/** Mono 16-bit speech and the rate it was made at. */
export interface SpokenAudio {
  samples: Int16Array;
  sampleRate: number;
}

export interface SpeakOptions {
  /** An espeak-ng voice name (`en-us`, `de`, ...); espeak-ng's default when unset. */
  voice?: string;
  /** Words per minute. */
  rate?: number;
}

/**
 * Real speech for audio tests, from espeak-ng (a Debian package that test-prerequisites.sh
 * installs): synthetic but with the pitch, formants and pauses of a voice, which a tone or noise
 * does not have and which a voice activity detector and a speech codec are built for.
 */
export async function speak(text: string, options: SpeakOptions = {}): Promise<SpokenAudio> {
  const args = ['--stdout'];
  if (options.voice) args.push('-v', options.voice);
  if (options.rate) args.push('-s', String(options.rate));
  args.push('--', text);
  const wav = await new Promise<Buffer>((resolve, reject) =>
    execFile('espeak-ng', args, { encoding: 'buffer', maxBuffer: 64 << 20 }, (error, stdout) => (error ? reject(error) : resolve(stdout))),
  );
  return parseWav(wav);
}

/**
 * Reads a 16-bit PCM mono WAV file's samples. The `data` chunk is looked for rather than assumed at
 * byte 44, and its size is not trusted when it runs past the end: espeak-ng writes to a pipe it
 * cannot seek back on, so it leaves a placeholder size (0x7ffff000, and other writers 0 or
 * 0xffffffff) and the samples are simply the rest of the stream.
 */
export function parseWav(wav: Buffer): SpokenAudio {
  if (wav.length < 12 || wav.toString('ascii', 0, 4) !== 'RIFF' || wav.toString('ascii', 8, 12) !== 'WAVE') throw new Error('not a RIFF/WAVE file');
  let sampleRate: number | undefined;
  let offset = 12;
  while (offset + 8 <= wav.length) {
    const id = wav.toString('ascii', offset, offset + 4);
    const declared = wav.readUInt32LE(offset + 4);
    const body = offset + 8;
    if (id === 'fmt ') {
      const format = wav.readUInt16LE(body);
      const channels = wav.readUInt16LE(body + 2);
      const bits = wav.readUInt16LE(body + 14);
      if (format !== 1 || channels !== 1 || bits !== 16) throw new Error(`expected 16-bit PCM mono, got format ${format}, ${channels} channels, ${bits} bits`);
      sampleRate = wav.readUInt32LE(body + 4);
    } else if (id === 'data') {
      if (sampleRate === undefined) throw new Error('WAV data chunk before its fmt chunk');
      const size = declared === 0 || body + declared > wav.length ? wav.length - body : declared;
      const bytes = wav.subarray(body, body + size - (size % 2));
      const samples = new Int16Array(bytes.length / 2);
      for (let i = 0; i < samples.length; i++) samples[i] = bytes.readInt16LE(i * 2);
      return { samples, sampleRate };
    }
    offset = body + declared + (declared % 2);
  }
  throw new Error('WAV file without a data chunk');
}
