import { Decoder, Encoder } from '@evan/opus';

/**
 * The libopus binding, behind the two classes that use it. `@evan/opus` was measured against
 * opusscript, its own WASM build and `@discordjs/opus` (BENCHMARKS.md, "Opus bindings measured
 * (issue 37)"): it ships prebuilt native libopus for Linux, macOS and Windows inside its npm
 * tarball, so installing runs no script and downloads nothing, falls back to its WASM build
 * elsewhere, and encodes speech in about half the CPU of the WASM builds.
 */
export type LibopusDecoder = Decoder & { drop?: () => void };
export type LibopusEncoder = Encoder & { drop?: () => void };

export function createLibopusDecoder(sampleRate: number): LibopusDecoder {
  return new Decoder({ channels: 1, sample_rate: sampleRate as Decoder['sample_rate'] });
}

export function createLibopusEncoder(sampleRate: number): LibopusEncoder {
  return new Encoder({ channels: 1, sample_rate: sampleRate as Encoder['sample_rate'], application: 'voip' });
}

/** Releases a coder's state now where the backend allows it (the WASM one); the native one frees it when collected. */
export function releaseLibopus(coder: LibopusDecoder | LibopusEncoder): void {
  coder.drop?.();
}
