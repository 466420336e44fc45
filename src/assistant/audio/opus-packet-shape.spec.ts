import { sine } from '../../../test/support/scripted-speech-server';
import { OpusEncoder } from './opus-encoder';
import { opusPacketProblem } from './opus-packet-shape';

describe('opusPacketProblem (RFC 6716, 3.4)', () => {
  it('passes what libopus encodes, at 60 ms and 20 ms', () => {
    for (const frameDurationMs of [20, 60] as const) {
      const encoder = new OpusEncoder({ sampleRate: 16_000, frameDurationMs });
      const tone = sine(440, 1, 16_000);
      const samples = (16_000 * frameDurationMs) / 1000;
      for (let offset = 0; offset + samples <= tone.length; offset += samples)
        expect(opusPacketProblem(encoder.encode(tone.subarray(offset, offset + samples)))).toBeUndefined();
      encoder.free();
    }
  });

  it.each([
    ['no bytes', [], 'empty'],
    ['code 1 with an odd payload', [0x01, 1, 2, 3], 'odd'],
    ['code 2 whose first frame runs past the end', [0x02, 10, 1, 2], 'past the end'],
    ['code 2 with a cut-off two-byte length', [0x02, 252], 'past the end'],
    ['code 3 without its frame count', [0x03], 'frame count'],
    ['code 3 with zero frames', [0x03, 0x00, 1], 'zero frames'],
    ['code 3 of 7 SILK 20 ms frames (140 ms)', [(1 << 3) | 0x03, 7, 1, 2, 3, 4, 5, 6, 7], 'over 120 ms'],
    ['code 3 CBR whose frames do not divide the payload', [0x03, 2, 1, 2, 3], 'divide'],
    ['code 3 whose padding runs past the end', [0x03, 0x41, 200, 1], 'padding past the end'],
    ['code 3 VBR whose frame lengths run past the end', [0x03, 0x82, 50, 1, 2], 'past the end'],
  ])('refuses %s', (_name, bytes, problem) => {
    expect(opusPacketProblem(Uint8Array.from(bytes))).toMatch(problem);
  });

  it('passes well-formed code 1, 2 and 3 packets, and a code 0 frame of up to 1275 bytes only', () => {
    expect(opusPacketProblem(Uint8Array.from([0x01, 1, 2, 3, 4]))).toBeUndefined();
    expect(opusPacketProblem(Uint8Array.from([0x02, 2, 1, 2, 3]))).toBeUndefined();
    expect(opusPacketProblem(Uint8Array.from([0x03, 0x43, 1, 1, 2, 3, 0]))).toBeUndefined();
    expect(opusPacketProblem(Uint8Array.from([0x03, 0x82, 1, 1, 2, 3]))).toBeUndefined();
    expect(opusPacketProblem(new Uint8Array(1276))).toBeUndefined();
    expect(opusPacketProblem(new Uint8Array(1277))).toMatch('1275');
  });
});
