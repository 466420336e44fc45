import { ADMISSION_MS, MemoryDeviceDirectory } from './device-directory';
import type { DeviceEntry } from './device-entry';

const entry = (id: string, principal: string, connectionId = `${id}-c1`): DeviceEntry => ({
  id,
  principal,
  owner: principal,
  instance: 'here',
  connectionId,
  since: new Date(0).toISOString(),
  tools: [],
});

describe('MemoryDeviceDirectory: who owns a device id', () => {
  let now: number;
  let directory: MemoryDeviceDirectory;

  beforeEach(() => {
    now = 1_000_000;
    directory = new MemoryDeviceDirectory('here', 60_000, () => now);
  });

  it('gives an id to the first principal that asks; anyone else is told who owns it', async () => {
    expect(await directory.admit('kitchen', 'alice')).toBe('alice');
    expect(await directory.admit('kitchen', 'bob')).toBe('alice');
    expect(await directory.owner('kitchen')).toBe('alice');
  });

  it('frees an id admitted for an upgrade that never became a connection, soon', async () => {
    await directory.admit('kitchen', 'alice');
    now += ADMISSION_MS;
    expect(await directory.admit('kitchen', 'bob')).toBe('bob');
  });

  it('keeps an id while its device is online, and for the lapse after, extended by what is pending', async () => {
    await directory.admit('kitchen', 'alice');
    await directory.claim(entry('kitchen', 'alice'));
    now += 10 * ADMISSION_MS;
    expect(await directory.owner('kitchen')).toBe('alice');
    expect(await directory.release('kitchen', 'kitchen-c1')).toBe(true);
    await directory.keepOwned('kitchen', 'alice', now + 120_000);
    await directory.keepOwned('kitchen', 'bob', now + 999_000_000); // not the owner's: ignored
    now += 60_000;
    expect(await directory.owner('kitchen')).toBe('alice');
    now += 60_000;
    expect(await directory.owner('kitchen')).toBeUndefined();
    expect(await directory.admit('kitchen', 'bob')).toBe('bob');
  });

  it('lets only the owner release an id, and only while its device is offline', async () => {
    await directory.admit('kitchen', 'alice');
    await directory.claim(entry('kitchen', 'alice'));
    expect(await directory.disown('kitchen', 'alice')).toBe('online');
    await directory.release('kitchen', 'kitchen-c1');
    expect(await directory.disown('kitchen', 'bob')).toBe('not-owner');
    expect(await directory.disown('kitchen', 'alice')).toBe('released');
    expect(await directory.owner('kitchen')).toBeUndefined();
  });

  it('keeps an activated id for good, online or not, until its owner unbinds it', async () => {
    expect(await directory.bind('kitchen', 'alice')).toBe('bound');
    expect(await directory.admit('kitchen', 'bob')).toBe('alice');
    await directory.claim(entry('kitchen', 'alice'));
    await directory.release('kitchen', 'kitchen-c1');
    now += 1000 * 60_000;
    expect(await directory.owner('kitchen')).toBe('alice');
    expect(await directory.bind('kitchen', 'bob')).toBe('taken');
    expect(await directory.unbind('kitchen', 'bob')).toBe(false);
    expect(await directory.unbind('kitchen', 'alice')).toBe(true);
    expect(await directory.owner('kitchen')).toBeUndefined();
  });

  it('binds an id another principal connected as only once that connection is gone, and lets an online unbound id lapse as usual', async () => {
    await directory.admit('hall', 'bob');
    await directory.claim(entry('hall', 'bob'));
    expect(await directory.bind('hall', 'alice')).toBe('taken');
    await directory.release('hall', 'hall-c1');
    expect(await directory.bind('hall', 'alice')).toBe('bound');
    await directory.claim(entry('hall', 'alice', 'hall-c2'));
    expect(await directory.unbind('hall', 'alice')).toBe(true);
    expect(await directory.owner('hall')).toBe('alice');
    await directory.release('hall', 'hall-c2');
    now += 60_000;
    expect(await directory.owner('hall')).toBeUndefined();
  });

  it('forgets lapsed ids as it grows, so ids that came and went do not pile up', async () => {
    for (let index = 0; index < 1024; index++) await directory.admit(`gone-${index}`, 'alice');
    now += ADMISSION_MS;
    await directory.admit('fresh', 'alice');
    expect((directory as unknown as { owners: Map<string, unknown> }).owners.size).toBe(1);
  });
});
