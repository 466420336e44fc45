import { execFile } from 'child_process';
import type { PcmAudio } from '../../src/assistant/speech-engines/speech-engine';
import { decodeWav } from '../../src/assistant/speech-engines/wav';

export interface SpeakOptions {
  /** An espeak-ng voice name (`en-us`, `de`, ...); espeak-ng's default when unset. */
  voice?: string;
  /** Words per minute. */
  rate?: number;
}

/**
 * Real speech for audio tests, from espeak-ng (a Debian package that test-prerequisites.sh
 * installs): synthetic but with the pitch, formants and pauses of a voice, which a tone or noise
 * does not have and which a voice activity detector and a speech codec are built for. espeak-ng
 * writes its WAV to a pipe it cannot seek back on, so the sizes in its header are placeholders;
 * `decodeWav` takes the samples that are there.
 */
export async function speak(text: string, options: SpeakOptions = {}): Promise<PcmAudio> {
  const args = ['--stdout'];
  if (options.voice) args.push('-v', options.voice);
  if (options.rate) args.push('-s', String(options.rate));
  args.push('--', text);
  const wav = await new Promise<Buffer>((resolve, reject) =>
    execFile('espeak-ng', args, { encoding: 'buffer', maxBuffer: 64 << 20 }, (error, stdout) => (error ? reject(error) : resolve(stdout))),
  );
  return decodeWav(wav);
}
