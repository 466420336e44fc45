import { PendingReplies } from './pending-replies';

describe('PendingReplies: one way to wait for an answer', () => {
  it('sends once registered, so a reply that comes at once is heard', async () => {
    const replies = new PendingReplies<string>();
    const answer = replies.request((id) => replies.settle(id, `reply to ${id}`), { id: 'r1' });
    await expect(answer).resolves.toBe('reply to r1');
    expect(replies.size).toBe(0);
  });

  it('drops a late reply: settle says nobody waits', async () => {
    const replies = new PendingReplies<string>();
    const caller = new AbortController();
    const answer = replies.request(() => undefined, { id: 'late', signal: caller.signal });
    caller.abort(new Error('gave up'));
    await expect(answer).rejects.toThrow('gave up');
    expect(replies.settle('late', 'too late')).toBe(false);
    expect(replies.size).toBe(0);
  });

  it('tells the other side when the caller gives up or the deadline passes, never when the reply came', async () => {
    const withdrawn: string[] = [];
    const replies = new PendingReplies<string>();
    const withdraw = (id: string) => withdrawn.push(id);
    const caller = new AbortController();
    const cancelled = replies.request(() => undefined, { id: 'cancelled', signal: caller.signal, withdraw });
    const timedOut = replies.request(() => undefined, { id: 'slow', timeoutMs: 20, timeoutError: () => new Error('no answer in time'), withdraw });
    const answered = replies.request((id) => setTimeout(() => replies.settle(id, 'ok'), 5), { id: 'answered', timeoutMs: 1000, withdraw });
    caller.abort(new Error('stop'));
    await expect(cancelled).rejects.toThrow('stop');
    await expect(timedOut).rejects.toThrow('no answer in time');
    await expect(answered).resolves.toBe('ok');
    expect(withdrawn.sort()).toEqual(['cancelled', 'slow']);
  });

  it('fails the requests about a peer that went away, and only those', async () => {
    const replies = new PendingReplies<string, string>();
    const toKitchen = replies.request(() => undefined, { tag: 'kitchen' });
    const toHall = replies.request((id) => setTimeout(() => replies.settle(id, 'hall'), 5), { tag: 'hall' });
    expect(
      replies.failWhere(
        (tag) => tag === 'kitchen',
        () => new Error('kitchen left'),
      ),
    ).toBe(1);
    await expect(toKitchen).rejects.toThrow('kitchen left');
    await expect(toHall).resolves.toBe('hall');
  });

  it('fails a request whose sending throws, refuses an id already waiting and a signal already aborted', async () => {
    const replies = new PendingReplies<string>();
    await expect(
      replies.request(() => {
        throw new Error('socket closed');
      }),
    ).rejects.toThrow('socket closed');
    const first = replies.request(() => undefined, { id: 'same' });
    await expect(replies.request(() => undefined, { id: 'same' })).rejects.toThrow(/already waiting/);
    replies.settle('same', 'one');
    await expect(first).resolves.toBe('one');
    await expect(replies.request(() => undefined, { signal: AbortSignal.abort(new Error('already')) })).rejects.toThrow('already');
    expect(replies.size).toBe(0);
  });

  it('lists the requests waiting, with their tags, in the order they were made', async () => {
    const replies = new PendingReplies<string, string>();
    const first = replies.request(() => undefined, { id: 'a', tag: 'kitchen' });
    const second = replies.request(() => undefined, { id: 'b', tag: 'hall' });
    expect([...replies.entries()]).toEqual([
      ['a', 'kitchen'],
      ['b', 'hall'],
    ]);
    replies.settle('a', 'done');
    replies.settle('b', 'done');
    await Promise.all([first, second]);
    expect([...replies.entries()]).toEqual([]);
  });

  it('leaves no abort listener behind on a signal many requests share', async () => {
    const replies = new PendingReplies<number>();
    const shared = new AbortController();
    let listeners = 0;
    const add = shared.signal.addEventListener.bind(shared.signal);
    const remove = shared.signal.removeEventListener.bind(shared.signal);
    shared.signal.addEventListener = ((...args: Parameters<typeof add>) => (listeners++, add(...args))) as typeof add;
    shared.signal.removeEventListener = ((...args: Parameters<typeof remove>) => (listeners--, remove(...args))) as typeof remove;
    for (let index = 0; index < 100; index++) await replies.request((id) => replies.settle(id, index), { signal: shared.signal });
    expect(listeners).toBe(0);
  });
});
