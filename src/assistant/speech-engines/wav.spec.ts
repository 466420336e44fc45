import { decodeWav, encodeWav, readWavHeader, WavFormatError } from './wav';

const samples = Int16Array.from([0, 1, -1, 32767, -32768, 1234]);

/** A WAV written by hand: `fmt ` with the given fields, the chunks in between, `data` with its declared size. */
function wavWith({
  format = 1,
  channels = 1,
  bits = 16,
  rate = 16000,
  between = [] as Uint8Array[],
  dataSize,
  data = new Uint8Array(encodeWav({ samples, sampleRate: rate }).subarray(44)),
}: Partial<{ format: number; channels: number; bits: number; rate: number; between: Uint8Array[]; dataSize: number; data: Uint8Array }> = {}) {
  const header = Buffer.alloc(36);
  header.write('RIFF', 0);
  header.write('WAVE', 8);
  header.write('fmt ', 12);
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(format, 20);
  header.writeUInt16LE(channels, 22);
  header.writeUInt32LE(rate, 24);
  header.writeUInt16LE(bits, 34);
  const dataHeader = Buffer.alloc(8);
  dataHeader.write('data', 0);
  dataHeader.writeUInt32LE(dataSize ?? data.length, 4);
  return new Uint8Array(Buffer.concat([header, ...between, dataHeader, data]));
}

function chunk(id: string, body: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.write(id, 0);
  head.writeUInt32LE(body.length, 4);
  return Buffer.concat([head, body, Buffer.alloc(body.length % 2)]);
}

describe('WAV', () => {
  it('encodes 16-bit mono PCM that decodes to the same samples and rate', () => {
    const wav = encodeWav({ samples, sampleRate: 22050 });
    expect(wav.length).toBe(44 + samples.length * 2);
    expect(decodeWav(wav)).toEqual({ sampleRate: 22050, samples });
  });

  it('finds fmt and data past other chunks, an odd-sized one padded', () => {
    const wav = wavWith({ between: [chunk('LIST', Buffer.from('INFOISFT')), chunk('fact', Buffer.from([1, 2, 3]))] });
    expect(decodeWav(wav)).toEqual({ sampleRate: 16000, samples });
  });

  it.each([0, 0xffffffff])('takes the rest as data when a streamed WAV says its data is %d bytes', (dataSize) => {
    expect(readWavHeader(wavWith({ dataSize }))).toEqual({ sampleRate: 16000, dataOffset: 44, dataBytes: undefined });
    expect(decodeWav(wavWith({ dataSize })).samples).toEqual(samples);
  });

  it('stops at the end of the data chunk when other chunks follow it', () => {
    const wav = new Uint8Array(Buffer.concat([wavWith(), chunk('LIST', Buffer.from('trailing'))]));
    expect(decodeWav(wav).samples).toEqual(samples);
  });

  it('waits for more bytes until the data chunk header has arrived', () => {
    const wav = wavWith();
    for (const length of [0, 11, 20, 43]) expect(readWavHeader(wav.subarray(0, length))).toBeUndefined();
    expect(readWavHeader(wav.subarray(0, 44))).toEqual({ sampleRate: 16000, dataOffset: 44, dataBytes: samples.length * 2 });
    expect(() => decodeWav(wav.subarray(0, 30))).toThrow(new WavFormatError('it ends before its data chunk'));
  });

  it.each([
    ['not a WAV', new TextEncoder().encode('<html>502 Bad Gateway</html>'), 'not a RIFF WAVE file'],
    ['stereo', wavWith({ channels: 2 }), 'it is 2-channel 16-bit, not mono 16-bit'],
    ['8-bit', wavWith({ bits: 8 }), 'it is 1-channel 8-bit, not mono 16-bit'],
    ['float', wavWith({ format: 3, bits: 32 }), 'its format is 3, not PCM (1)'],
  ])('refuses %s', (_, bytes, reason) => {
    expect(() => decodeWav(bytes)).toThrow(new WavFormatError(reason));
  });
});
