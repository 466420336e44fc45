import { decodeFrame, encodeFrame, FRAME_TYPE_JSON, FramingError } from './framing';

/** Bytes written out by hand from the packed structs of main/protocols/protocol.h, big-endian. */
describe('xiaozhi binary framing', () => {
  const opus = Uint8Array.from([0xf8, 0xff, 0xfe]);

  it('sends version 1 frames as the raw Opus packet', () => {
    expect([...encodeFrame(1, opus)]).toEqual([0xf8, 0xff, 0xfe]);
    expect(decodeFrame(1, Buffer.from([0xf8, 0xff, 0xfe]))).toEqual({ type: 0, timestamp: 0, payload: Buffer.from(opus) });
  });

  it('writes version 2 as version, type, reserved, timestamp, payload size, payload', () => {
    const frame = encodeFrame(2, opus, { timestamp: 0x01020304 });
    expect([...frame]).toEqual([
      ...[0x00, 0x02],
      ...[0x00, 0x00],
      ...[0x00, 0x00, 0x00, 0x00],
      ...[0x01, 0x02, 0x03, 0x04],
      ...[0x00, 0x00, 0x00, 0x03],
      ...[0xf8, 0xff, 0xfe],
    ]);
  });

  it('writes version 3 as type, reserved, payload size, payload', () => {
    expect([...encodeFrame(3, opus)]).toEqual([0x00, 0x00, 0x00, 0x03, 0xf8, 0xff, 0xfe]);
    const large = encodeFrame(3, new Uint8Array(300));
    expect([...large.subarray(0, 4)]).toEqual([0x00, 0x00, 0x01, 0x2c]);
    expect(large.length).toBe(304);
  });

  it('writes only the low 16 bits of a version 3 size, as the firmware does', () => {
    expect([...encodeFrame(3, new Uint8Array(65_537)).subarray(0, 4)]).toEqual([0x00, 0x00, 0x00, 0x01]);
  });

  it('reads a version 2 frame by its payload size, whatever its version and type say', () => {
    const frame = Buffer.from([0x00, 0x07, 0x00, 0x01, 0xde, 0xad, 0xbe, 0xef, 0x00, 0x00, 0x03, 0xe8, 0x00, 0x00, 0x00, 0x02, 0xaa, 0xbb, 0xcc, 0xdd]);
    expect(decodeFrame(2, frame)).toEqual({ type: FRAME_TYPE_JSON, timestamp: 1000, payload: Buffer.from([0xaa, 0xbb]) });
  });

  it('reads a version 3 frame by its payload size', () => {
    const frame = Buffer.from([0x01, 0x09, 0x00, 0x02, 0xaa, 0xbb, 0xcc]);
    expect(decodeFrame(3, frame)).toEqual({ type: 1, timestamp: 0, payload: Buffer.from([0xaa, 0xbb]) });
  });

  it('refuses frames the firmware would read past the end of', () => {
    expect(() => decodeFrame(2, Buffer.alloc(15))).toThrow(FramingError);
    expect(() => decodeFrame(2, Buffer.from([0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 1, 2]))).toThrow(FramingError);
    expect(() => decodeFrame(3, Buffer.from([0, 0, 1]))).toThrow(FramingError);
    expect(() => decodeFrame(3, Buffer.from([0, 0, 0, 5, 1]))).toThrow(FramingError);
  });

  it('reads back what it writes, for every version', () => {
    for (const version of [1, 2, 3] as const) {
      const decoded = decodeFrame(version, encodeFrame(version, opus, { timestamp: version === 2 ? 42 : 0 }));
      expect([...decoded.payload]).toEqual([...opus]);
      expect(decoded.timestamp).toBe(version === 2 ? 42 : 0);
    }
  });
});
