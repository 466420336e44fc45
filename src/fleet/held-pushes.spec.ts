import { HeldPush, MemoryHeldPushes } from './held-pushes';

const push = (turnId: string, by: string, expiresAt = 2_000_000): HeldPush => ({ kind: 'say', turnId, text: turnId, expiresAt, by });
const limits = { perDevice: 3, perPrincipal: 4 };

describe('MemoryHeldPushes', () => {
  let now: number;
  let held: MemoryHeldPushes;
  const kitchen = { owner: 'alice', deviceId: 'kitchen' };

  beforeEach(() => {
    now = 1_000_000;
    held = new MemoryHeldPushes(5, () => now);
  });

  it("keeps a device's pushes for its owner only, and takes each off once it was delivered", async () => {
    await held.hold(kitchen, push('one', 'alice'), limits);
    await held.hold(kitchen, push('two', 'alice'), limits);
    expect(await held.next({ owner: 'mallory', deviceId: 'kitchen' })).toBeUndefined();
    const first = await held.next(kitchen);
    expect(first?.turnId).toBe('one');
    expect((await held.next(kitchen))?.turnId).toBe('one'); // not taken until done
    await held.done(kitchen, first!);
    await held.done(kitchen, first!); // twice: the second is not the oldest any more
    expect((await held.next(kitchen))?.turnId).toBe('two');
  });

  it('says which bound is full: the device, the asking principal, or the instance', async () => {
    for (const id of ['a', 'b', 'c']) expect(await held.hold(kitchen, push(id, 'alice'), limits)).toBeUndefined();
    expect(await held.hold(kitchen, push('d', 'alice'), limits)).toBe('device');
    expect(await held.hold({ owner: 'alice', deviceId: 'hall' }, push('e', 'alice'), limits)).toBeUndefined();
    expect(await held.hold({ owner: 'alice', deviceId: 'hall' }, push('f', 'alice'), limits)).toBe('principal');
    // Another principal is not refused for alice's pushes...
    expect(await held.hold({ owner: 'bob', deviceId: 'attic' }, push('g', 'bob'), limits)).toBeUndefined();
    // ...until the instance's own bound (5 here) is reached.
    expect(await held.hold({ owner: 'carol', deviceId: 'porch' }, push('h', 'carol'), limits)).toBe('instance');
  });

  it('drops pushes whose hold ran out, and frees what they counted', async () => {
    await held.hold(kitchen, push('old', 'alice', now + 1000), limits);
    await held.hold(kitchen, push('new', 'alice', now + 5000), limits);
    now += 2000;
    expect((await held.next(kitchen))?.turnId).toBe('new');
    for (const id of ['x', 'y', 'z']) await held.hold({ owner: 'alice', deviceId: 'hall' }, push(id, 'alice', now + 5000), limits);
    now += 4000;
    expect(await held.hold({ owner: 'alice', deviceId: 'porch' }, push('after', 'alice', now + 5000), limits)).toBeUndefined();
  });

  it('drops everything held for a released id', async () => {
    await held.hold(kitchen, push('one', 'alice'), limits);
    await held.hold(kitchen, push('two', 'bob'), limits);
    expect((await held.drop('kitchen', 'alice')).map((dropped) => dropped.turnId)).toEqual(['one', 'two']);
    expect(await held.next(kitchen)).toBeUndefined();
    for (const id of ['a', 'b', 'c', 'd']) expect(await held.hold({ owner: 'bob', deviceId: `d-${id}` }, push(id, 'bob'), limits)).toBeUndefined();
  });
});
