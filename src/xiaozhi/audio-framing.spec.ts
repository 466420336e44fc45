import { frame, unframe } from './audio-framing';

const opus = Uint8Array.from([0x78, 0x01, 0x02, 0x03, 0x04]);

describe('xiaozhi audio framing', () => {
  it('version 1 is the Opus packet itself, both ways', () => {
    expect(frame(1, opus, 123)).toBe(opus);
    expect(unframe(1, Buffer.from(opus))).toEqual({ packet: Buffer.from(opus) });
  });

  it('version 2 writes {u16 version, u16 type, u32 reserved, u32 timestamp, u32 size} big-endian, then the payload', () => {
    const framed = Buffer.from(frame(2, opus, 0x01020304));
    expect([...framed.subarray(0, 16)]).toEqual([0, 2, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 0, 0, 0, 5]);
    expect([...framed.subarray(16)]).toEqual([...opus]);
    expect(unframe(2, framed)).toEqual({ packet: Buffer.from(opus) });
  });

  it('version 3 writes {u8 type, u8 reserved, u16 size} big-endian, then the payload', () => {
    const framed = Buffer.from(frame(3, opus, 99));
    expect([...framed]).toEqual([0, 0, 0, 5, ...opus]);
    expect(unframe(3, framed)).toEqual({ packet: Buffer.from(opus) });
  });

  it('wraps a timestamp past 32 bits, as the firmware reads a u32', () => {
    expect(Buffer.from(frame(2, opus, 2 ** 32 + 7)).readUInt32BE(8)).toBe(7);
  });

  it('refuses a header cut short, a size that is not what follows, and a JSON payload', () => {
    expect(unframe(2, Buffer.alloc(10))).toEqual({ problem: expect.stringContaining('16-byte header') });
    expect(unframe(3, Buffer.from([0, 0]))).toEqual({ problem: expect.stringContaining('4-byte header') });
    expect(unframe(3, Buffer.from([0, 0, 0, 9, 1, 2]))).toEqual({ problem: expect.stringContaining('announces 9 bytes') });
    const json = Buffer.from(frame(2, opus, 0));
    json.writeUInt16BE(1, 2);
    expect(unframe(2, json)).toEqual({ problem: expect.stringContaining('type 1') });
  });
});
