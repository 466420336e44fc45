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

  it('tells when it has room for one more, so work that must not be refused waits instead', async () => {
    const queue = new SerialQueue(1);
    await queue.whenRoom();
    let release!: () => void;
    const running = queue.run(() => new Promise<void>((resolve) => (release = resolve)));
    const waiting = queue.run(() => 'second');
    let roomy = false;
    const room = queue.whenRoom().then(() => (roomy = true));
    await tick();
    expect(roomy).toBe(false);
    release();
    await room;
    expect(await queue.run(() => 'third')).toBe('third');
    await Promise.all([running, waiting]);
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

  it('frees the place of a task withdrawn while it waits, which then never runs', async () => {
    const queue = new SerialQueue(1);
    let release!: () => void;
    const running = queue.run(() => new Promise<void>((resolve) => (release = resolve)));
    const ran: number[] = [];
    const withdrawn = queue.schedule(() => ran.push(1));
    expect(() => queue.run(() => ran.push(2))).toThrow(QueueFullError);
    expect(withdrawn.withdraw()).toBe(true);
    expect(withdrawn.withdraw()).toBe(false);
    const next = queue.run(() => ran.push(3));
    await tick();
    release();
    await running;
    expect(await withdrawn.done).toBeUndefined();
    await next;
    expect(ran).toEqual([3]);
    await queue.whenIdle();
    expect(queue.size).toBe(0);
  });

  it('cannot withdraw a task that has started', async () => {
    const queue = new SerialQueue();
    let release!: () => void;
    const started = queue.schedule(() => new Promise<string>((resolve) => (release = () => resolve('done'))));
    await tick();
    expect(started.withdraw()).toBe(false);
    release();
    expect(await started.done).toBe('done');
    await queue.whenIdle();
    expect(queue.size).toBe(0);
  });
});
