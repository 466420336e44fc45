import { PacedSender } from './paced-sender';

describe('PacedSender', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  function sender(options: { leadFrames?: number; capacity?: number; firstFrameDelayMs?: number } = {}) {
    const sent: { frame: number; atMs: number }[] = [];
    const start = performance.now();
    const paced = new PacedSender<number>({ frameMs: 60, ...options, send: (frame) => sent.push({ frame, atMs: performance.now() - start }) });
    return { paced, sent };
  }

  it('sends the lead at once, then one frame per frame duration, in order, and finishes when all are sent', async () => {
    const { paced, sent } = sender({ leadFrames: 3, capacity: 100 });
    for (let frame = 0; frame < 10; frame++) await paced.enqueue(frame);
    paced.end();
    expect(sent.map((entry) => entry.frame)).toEqual([0, 1, 2]);
    await jest.advanceTimersByTimeAsync(60);
    expect(sent).toHaveLength(4);
    await jest.advanceTimersByTimeAsync(1000);
    expect(sent.map((entry) => entry.frame)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    for (const [index, { atMs }] of sent.entries()) expect(atMs).toBeGreaterThanOrEqual((index - 3) * 60);
    await expect(paced.finished).resolves.toBe('sent');
    expect(jest.getTimerCount()).toBe(0);
  });

  it('holds the first frame for firstFrameDelayMs from its creation, then paces from there, and leaves no timer', async () => {
    const { paced, sent } = sender({ leadFrames: 3, capacity: 100, firstFrameDelayMs: 60 });
    await jest.advanceTimersByTimeAsync(20);
    for (let frame = 0; frame < 5; frame++) await paced.enqueue(frame);
    paced.end();
    expect(sent).toHaveLength(0);
    await jest.advanceTimersByTimeAsync(39);
    expect(sent).toHaveLength(0);
    await jest.advanceTimersByTimeAsync(1);
    expect(sent.map((entry) => entry.frame)).toEqual([0, 1, 2]);
    expect(sent[0].atMs).toBeGreaterThanOrEqual(60);
    await jest.advanceTimersByTimeAsync(120);
    expect(sent.map((entry) => entry.frame)).toEqual([0, 1, 2, 3, 4]);
    await expect(paced.finished).resolves.toBe('sent');
    expect(jest.getTimerCount()).toBe(0);
  });

  it('drops a held first frame on abort, and finishes at once when it ends with nothing queued during the delay', async () => {
    const held = sender({ firstFrameDelayMs: 60 });
    await held.paced.enqueue(0);
    held.paced.abort();
    await jest.advanceTimersByTimeAsync(100);
    expect(held.sent).toHaveLength(0);
    await expect(held.paced.finished).resolves.toBe('aborted');
    const empty = sender({ firstFrameDelayMs: 60 });
    empty.paced.end();
    await expect(empty.paced.finished).resolves.toBe('sent');
    expect(jest.getTimerCount()).toBe(0);
  });

  it('refuses a negative delay', () => {
    expect(() => sender({ firstFrameDelayMs: -1 })).toThrow(RangeError);
  });

  it('makes the producer wait when its queue is full', async () => {
    const { paced, sent } = sender({ leadFrames: 2, capacity: 2 });
    const accepted: number[] = [];
    for (let frame = 0; frame < 8; frame++) void paced.enqueue(frame).then(() => accepted.push(frame));
    await Promise.resolve();
    expect(sent).toHaveLength(2);
    expect(accepted).toEqual([0, 1, 2, 3]);
    expect(paced.pending).toBe(6);
    await jest.advanceTimersByTimeAsync(120);
    expect(accepted).toEqual([0, 1, 2, 3, 4, 5]);
    expect(sent.map((entry) => entry.frame)).toEqual([0, 1, 2, 3]);
  });

  it('drops everything queued on abort, at once, releases waiting producers and leaves no timer', async () => {
    const { paced, sent } = sender({ leadFrames: 3, capacity: 4 });
    const producers = Array.from({ length: 20 }, (_, frame) => paced.enqueue(frame));
    paced.abort();
    await Promise.all(producers);
    await expect(paced.finished).resolves.toBe('aborted');
    expect(jest.getTimerCount()).toBe(0);
    await jest.advanceTimersByTimeAsync(5000);
    expect(sent.map((entry) => entry.frame)).toEqual([0, 1, 2]);
    await paced.enqueue(99);
    expect(sent).toHaveLength(3);
  });

  it('starts the clock again after the producer fell behind, rather than bursting to catch up', async () => {
    const { paced, sent } = sender({ leadFrames: 3, capacity: 100 });
    await paced.enqueue(0);
    await jest.advanceTimersByTimeAsync(2000);
    for (let frame = 1; frame < 10; frame++) await paced.enqueue(frame);
    expect(sent).toHaveLength(4);
    paced.end();
    await jest.advanceTimersByTimeAsync(1000);
    await expect(paced.finished).resolves.toBe('sent');
  });

  it('finishes at once when ended empty, and refuses frames after end', async () => {
    const { paced } = sender();
    paced.end();
    await expect(paced.finished).resolves.toBe('sent');
    expect(() => paced.enqueue(1)).not.toThrow();
    const { paced: open } = sender();
    open.end();
    expect(jest.getTimerCount()).toBe(0);
  });
});
