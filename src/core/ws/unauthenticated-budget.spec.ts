import { UnauthenticatedBudget } from './unauthenticated-budget';

/** A masked client frame carrying `payload` bytes, its header in the shortest form that holds the length. */
function frame(payload: number): Buffer {
  const length = payload < 126 ? [payload] : payload < 65536 ? [126, payload >> 8, payload & 0xff] : [127, ...bigEndian64(payload)];
  return Buffer.concat([Buffer.from([0x81, 0x80 | length[0], ...length.slice(1), 0, 0, 0, 0]), Buffer.alloc(payload, 0x20)]);
}

const bigEndian64 = (value: number) => [...Buffer.from(BigInt(value).toString(16).padStart(16, '0'), 'hex')];

/** Feeds `bytes` to `budget` in pieces of `size`; the answer to the last piece fed, stopping at the first refusal. */
function feed(budget: UnauthenticatedBudget, bytes: Buffer, size: number): boolean {
  for (let at = 0; at < bytes.length; at += size) {
    if (!budget.admits(bytes.subarray(at, at + size))) return false;
  }
  return true;
}

describe('UnauthenticatedBudget', () => {
  it('admits frames that end within the budget, whatever the header form, and refuses the first frame that would end past it', () => {
    const budget = new UnauthenticatedBudget(1024);
    // 6 + 100, 8 + 300, 8 + 600 = 1022 bytes.
    expect(budget.admits(Buffer.concat([frame(100), frame(300), frame(600)]))).toBe(true);
    expect(new UnauthenticatedBudget(1022).admits(Buffer.concat([frame(100), frame(300), frame(600)]))).toBe(true);
    expect(new UnauthenticatedBudget(1021).admits(Buffer.concat([frame(100), frame(300), frame(600)]))).toBe(false);
    // 2 bytes left: not even an empty frame's header (6 bytes) fits.
    expect(budget.admits(frame(0))).toBe(false);
  });

  it('refuses at the header of a frame announcing more than the budget, having read none of its payload', () => {
    expect(new UnauthenticatedBudget(65536).admits(frame(65536).subarray(0, 14))).toBe(false);
    expect(new UnauthenticatedBudget(65536).admits(frame(65536 - 14))).toBe(true);
    const huge = Buffer.from([0x81, 0x80 | 127, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
    expect(new UnauthenticatedBudget(65536).admits(huge)).toBe(false);
  });

  it.each([1, 2, 3, 7, 13, 14, 15, 64])('finds every header when the stream comes in pieces of %d bytes', (size) => {
    const stream = Buffer.concat([frame(10), frame(200), frame(0), frame(70_000)]);
    const within = new UnauthenticatedBudget(100_000);
    expect(feed(within, stream, size)).toBe(true);
    // The last frame's header alone (14 bytes) tells that 70,000 more bytes do not fit in 70,000.
    const tight = new UnauthenticatedBudget(70_000);
    expect(feed(tight, stream.subarray(0, 16 + 208 + 6 + 14), size)).toBe(false);
  });

  it('refuses once more bytes than the budget have come, even without a whole header', () => {
    const budget = new UnauthenticatedBudget(1024);
    expect(budget.admits(frame(1000))).toBe(true);
    // The first byte of a header: 1,009 bytes so far.
    expect(budget.admits(Buffer.from([0x81]))).toBe(true);
    expect(budget.admits(Buffer.alloc(16))).toBe(false);
  });
});
