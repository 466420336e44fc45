import { MAX_PENDING_IN_MEMORY, MemoryActivationStore, type Binding, type PendingActivation } from './activation-store';

const pending = (code: string, deviceId = 'aa:bb', clientId = 'client-1'): PendingActivation => ({ code, deviceId, clientId, challenge: 'c', proven: false });
const binding = (deviceId = 'aa:bb', principal = 'alice'): Binding => ({
  deviceId,
  principal,
  clientId: 'client-1',
  boundAt: new Date(0).toISOString(),
  challenge: 'c',
  serial: false,
  needsProof: false,
  issue: true,
});

describe('MemoryActivationStore', () => {
  let now: number;
  let store: MemoryActivationStore;

  beforeEach(() => {
    now = 1_000_000;
    store = new MemoryActivationStore(() => now);
  });

  it('keeps a code for its device and client until it expires, and lets it be taken once', async () => {
    expect(await store.openPending(pending('123456'), 1000)).toBe('opened');
    expect(await store.openPending(pending('123456', 'cc:dd'), 1000)).toBe('collision');
    expect(await store.pending('aa:bb', 'client-1')).toMatchObject({ code: '123456' });
    expect(await store.pending('aa:bb', 'client-2')).toBeUndefined();
    expect(await store.takeCode('123456')).toMatchObject({ deviceId: 'aa:bb' });
    expect(await store.takeCode('123456')).toBeUndefined();
    expect(await store.pending('aa:bb', 'client-1')).toBeUndefined();

    await store.openPending(pending('654321'), 1000);
    now += 1000;
    expect(await store.takeCode('654321')).toBeUndefined();
  });

  it('holds a bounded number of live codes', async () => {
    for (let index = 0; index < MAX_PENDING_IN_MEMORY; index++) await store.openPending(pending(String(index).padStart(6, '0'), `d${index}`), 1000);
    expect(await store.openPending(pending('999999', 'late'), 1000)).toBe('full');
    now += 1000;
    expect(await store.openPending(pending('999999', 'late'), 1000)).toBe('opened');
  });

  it('issues a secret once per rotation, to the bound client only, and forgets a revoked or replaced one', async () => {
    await store.putBinding(binding());
    expect(await store.issueSecret('aa:bb', 'client-2', 'h0')).toBe(false);
    expect(await store.issueSecret('aa:bb', 'client-1', 'h1')).toBe(true);
    expect(await store.issueSecret('aa:bb', 'client-1', 'h2')).toBe(false);
    expect(await store.deviceOfSecret('h1')).toEqual({ deviceId: 'aa:bb', principal: 'alice' });

    expect(await store.rotate('aa:bb', 'bob')).toBe(false);
    expect(await store.rotate('aa:bb', 'alice')).toBe(true);
    expect(await store.deviceOfSecret('h1')).toBeDefined();
    expect(await store.issueSecret('aa:bb', 'client-1', 'h2')).toBe(true);
    expect(await store.deviceOfSecret('h1')).toBeUndefined();

    expect(await store.revoke('aa:bb', 'bob')).toBe(false);
    expect(await store.revoke('aa:bb', 'alice')).toBe(true);
    expect(await store.deviceOfSecret('h2')).toBeUndefined();
    expect(await store.issueSecret('aa:bb', 'client-1', 'h3')).toBe(false);
  });

  it('withholds the secret of a serial-number device until it answers its challenge', async () => {
    await store.putBinding({ ...binding(), serial: true, needsProof: true });
    expect(await store.issueSecret('aa:bb', 'client-1', 'h1')).toBe(false);
    await store.proveBinding('aa:bb');
    expect(await store.issueSecret('aa:bb', 'client-1', 'h1')).toBe(true);
  });

  it("unbinds one device without touching another's binding or secret", async () => {
    await store.putBinding(binding('aa:bb'));
    await store.putBinding(binding('cc:dd'));
    await store.issueSecret('aa:bb', 'client-1', 'h-ab');
    await store.issueSecret('cc:dd', 'client-1', 'h-cd');
    expect(await store.unbind('aa:bb', 'alice')).toBe(true);
    expect(await store.deviceOfSecret('h-ab')).toBeUndefined();
    expect(await store.binding('aa:bb')).toBeUndefined();
    expect(await store.deviceOfSecret('h-cd')).toEqual({ deviceId: 'cc:dd', principal: 'alice' });
  });
});
