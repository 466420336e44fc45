import { QueueFullError, SerialQueue } from './serial-queue';

describe('SerialQueue', () => {
  const tick = () => new Promise((resolve) => setImmediate(resolve));

  it('runs tasks one after another, in the order they came, whatever their outcome', async () => {
    const queue = new SerialQueue();
    const order: string[] = [];
    let release!: () => void;
    const first = queue.run(() => new Promise<void>((resolve) => (release = () => (order.push('first'), resolve()))));
    const failing = queue.run(() => {
      order.push('second');
      throw new Error('boom');
    });
    const third = queue.run(() => order.push('third'));
    await tick();
    expect(order).toEqual([]);
    release();
    await first;
    await expect(failing).rejects.toThrow('boom');
    await third;
    expect(order).toEqual(['first', 'second', 'third']);
  });

  it('refuses a task at once when too many wait behind the running one', async () => {
    const queue = new SerialQueue(2);
    let release!: () => void;
    const running = queue.run(() => new Promise<void>((resolve) => (release = resolve)));
    const waiting = [queue.run(() => 1), queue.run(() => 2)];
    expect(() => queue.run(() => 3)).toThrow(QueueFullError);
    await tick();
    release();
    await running;
    expect(await Promise.all(waiting)).toEqual([1, 2]);
    expect(await queue.run(() => 4)).toBe(4);
  });

  it('tells when it is idle', async () => {
    const queue = new SerialQueue();
    await queue.whenIdle();
    let release!: () => void;
    void queue.run(() => new Promise<void>((resolve) => (release = resolve)));
    let idle = false;
    void queue.whenIdle().then(() => (idle = true));
    await tick();
    expect(idle).toBe(false);
    release();
    await tick();
    await tick();
    expect(idle).toBe(true);
  });
});
