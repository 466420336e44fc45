import { pcmChunks, samplesFromBytes } from './pcm-bytes';

async function* piecesOf(bytes: number[], sizes: number[]) {
  let at = 0;
  for (const size of sizes) {
    yield Uint8Array.from(bytes.slice(at, at + size));
    at += size;
  }
}

async function all(chunks: AsyncIterable<Int16Array>) {
  const got: Int16Array[] = [];
  for await (const chunk of chunks) got.push(chunk);
  return got;
}

describe('PCM bytes', () => {
  const samples = Int16Array.from([1, -2, 300, -32768, 32767]);
  const bytes = [...new Uint8Array(samples.buffer)];

  it('reads little-endian samples from bytes at any offset', () => {
    const shifted = Uint8Array.from([9, ...bytes]).subarray(1);
    expect(samplesFromBytes(shifted)).toEqual(samples);
  });

  it('yields a chunk per piece, a sample split between pieces joined again', async () => {
    const chunks = await all(pcmChunks(piecesOf(bytes, [3, 1, 5, 1])));
    expect(chunks.map((chunk) => [...chunk])).toEqual([[1], [-2], [300, -32768], [32767]]);
  });

  it('stops at the limit, and drops a lone byte at the end', async () => {
    expect(Int16Array.from((await all(pcmChunks(piecesOf(bytes, [3, 7]), 6))).flatMap((c) => [...c]))).toEqual(samples.subarray(0, 3));
    expect((await all(pcmChunks(piecesOf([...bytes, 7], [11])))).flatMap((c) => [...c])).toEqual([...samples]);
  });
});
