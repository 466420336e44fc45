import { FirmwareEntry, Rollout, RolloutGroup } from './rollout-model';
import { DeviceFacts, GLOB_TESTS_PER_TICK, RolloutPlan, ReachTest } from './rollout-plan';

const OWNER = 'ops';
let clock = Date.parse('2026-11-01T00:00:00Z');
const stamp = () => new Date((clock += 1000)).toISOString();

const firmware = (id: string, version: string, boards = ['bread-*']): FirmwareEntry => {
  const at = stamp();
  return { id, version, url: `https://fw.example.com/${id}.bin`, boards, owner: OWNER, created_at: at, updated_at: at, revision: 1 };
};
const rollout = (id: string, group: RolloutGroup, extra: Partial<Rollout> = {}): Rollout => {
  const at = stamp();
  return { id, group, state: 'active', owner: OWNER, created_at: at, updated_at: at, revision: 1, ...extra };
};
const device = (id: string, facts: Partial<DeviceFacts> = {}): DeviceFacts => ({ id, owner: OWNER, board: 'bread-compact-wifi', version: '1.0.0', ...facts });
/** The owner reaches its own devices only. */
const ownOnly: ReachTest = (owner, _id, deviceOwner) => owner === deviceOwner;

describe('the rollout plan', () => {
  const entries = [firmware('fw-2', '2.0.0'), firmware('fw-3', '3.0.0'), firmware('fw-box', '9.0.0', ['esp-box-*']), firmware('fw-any', '4.0.0', ['*'])];

  it('ranks explicit ids over globs over a share, and the newest among equals', async () => {
    const share = rollout('share', { percent: 100 }, { firmware_id: 'fw-2' });
    const glob = rollout('glob', { globs: ['kitchen-*'] }, { firmware_id: 'fw-3' });
    const ids = rollout('ids', { devices: ['kitchen-1'] }, { firmware_id: 'fw-2' });
    const newerGlob = rollout('newer-glob', { globs: ['kitchen-*'] }, { firmware_id: 'fw-any' });
    // Given in an order that is none of the precedence's.
    const plan = new RolloutPlan([share, newerGlob, ids, glob], entries);
    expect((await plan.offerFor(device('kitchen-1'), ownOnly)).firmware?.rollout).toBe('ids');
    expect((await plan.offerFor(device('kitchen-2'), ownOnly)).firmware?.rollout).toBe('newer-glob');
    expect((await plan.offerFor(device('hall-1'), ownOnly)).firmware?.rollout).toBe('share');
  });

  it("offers a build only to its boards, falling through to the next rollout that has one for the device's board", async () => {
    const box = rollout('box', { devices: ['d1', 'd2'] }, { firmware_id: 'fw-box' });
    const all = rollout('all', { percent: 100 }, { firmware_id: 'fw-3' });
    const plan = new RolloutPlan([box, all], entries);
    expect((await plan.offerFor(device('d1', { board: 'esp-box-3' }), ownOnly)).firmware).toMatchObject({ rollout: 'box', offer: { version: '9.0.0' } });
    expect((await plan.offerFor(device('d2'), ownOnly)).firmware).toMatchObject({ rollout: 'all', offer: { version: '3.0.0' } });
    // A board that did not say matches only a build for every board ("*").
    expect((await plan.offerFor(device('d3', { board: undefined }), ownOnly)).firmware).toBeUndefined();
    const anyBoard = new RolloutPlan([rollout('any', { percent: 100 }, { firmware_id: 'fw-any' })], entries);
    expect((await anyBoard.offerFor(device('d3', { board: undefined }), ownOnly)).firmware?.offer?.version).toBe('4.0.0');
  });

  it('offers nothing to a device that runs the version or a newer one, unless forced, and offers to one that did not say', async () => {
    const plan = new RolloutPlan([rollout('r', { percent: 100 }, { firmware_id: 'fw-2' })], entries);
    expect((await plan.offerFor(device('d', { version: '2.0.0' }), ownOnly)).firmware).toEqual({ rollout: 'r', firmware_id: 'fw-2', version: '2.0.0' });
    expect((await plan.offerFor(device('d', { version: '2.1.0' }), ownOnly)).firmware?.offer).toBeUndefined();
    expect((await plan.offerFor(device('d', { version: undefined }), ownOnly)).firmware?.offer).toEqual({
      version: '2.0.0',
      url: 'https://fw.example.com/fw-2.bin',
    });
    const back = new RolloutPlan([rollout('back', { percent: 100 }, { firmware_id: 'fw-2', force: true })], entries);
    expect((await back.offerFor(device('d', { version: '2.1.0' }), ownOnly)).firmware?.offer).toEqual({
      version: '2.0.0',
      url: 'https://fw.example.com/fw-2.bin',
      force: 1,
    });
    expect((await back.offerFor(device('d', { version: '2.0.0' }), ownOnly)).firmware?.offer).toBeUndefined();
  });

  it('offers nothing from paused and stopped rollouts', async () => {
    const plan = new RolloutPlan(
      [rollout('p', { percent: 100 }, { firmware_id: 'fw-2', state: 'paused' }), rollout('s', { devices: ['d'] }, { firmware_id: 'fw-3', state: 'stopped' })],
      entries,
    );
    expect(plan.size).toBe(0);
    expect(await plan.offerFor(device('d'), ownOnly)).toEqual({});
  });

  it("takes a share of the owner's own devices only, and ids and globs only of devices the owner reaches", async () => {
    const plan = new RolloutPlan(
      [rollout('ids', { devices: ['theirs'] }, { firmware_id: 'fw-2' }), rollout('all', { percent: 100 }, { firmware_id: 'fw-3' })],
      entries,
    );
    expect(await plan.offerFor(device('theirs', { owner: 'someone-else' }), ownOnly)).toEqual({});
    const granted: ReachTest = (owner, id, deviceOwner) => owner === deviceOwner || id === 'theirs';
    expect((await plan.offerFor(device('theirs', { owner: 'someone-else' }), granted)).firmware?.rollout).toBe('ids');
    expect(await plan.offerFor(device('unowned', { owner: undefined }), granted)).toEqual({});
  });

  it('decides the endpoint apart from the firmware, each from the first rollout that has one', async () => {
    const move = rollout('move', { globs: ['lab-*'] }, { endpoint: { websocket_url: 'wss://b.example.com/xiaozhi/v1/' } });
    const fw = rollout('fw', { devices: ['lab-1'] }, { firmware_id: 'fw-2' });
    const plan = new RolloutPlan([move, fw], entries);
    expect(await plan.offerFor(device('lab-1'), ownOnly)).toMatchObject({
      firmware: { rollout: 'fw', offer: { version: '2.0.0' } },
      endpoint: { rollout: 'move', websocket_url: 'wss://b.example.com/xiaozhi/v1/' },
    });
  });

  it('tests the globs of many rollouts without stalling: linear tests, other work let in between', async () => {
    // The worst a store may hold: 200 rollouts of 16 globs built to backtrack, and a 62-character id none matches.
    const hostile = Array.from({ length: 16 }, (_, i) => `${'a*'.repeat(40)}b${i}`);
    const rollouts = Array.from({ length: 200 }, (_, i) => rollout(`g${i}`, { globs: hostile }, { firmware_id: 'fw-2' }));
    const plan = new RolloutPlan(rollouts, entries);
    let ticks = 0;
    const ticking = setInterval(() => ticks++, 0);
    const started = performance.now();
    const offer = await plan.offerFor(device('a'.repeat(62)), ownOnly);
    const elapsed = performance.now() - started;
    clearInterval(ticking);
    expect(offer).toEqual({});
    expect(elapsed).toBeLessThan(500);
    // 3200 glob tests: other work ran between each GLOB_TESTS_PER_TICK of them.
    expect(ticks).toBeGreaterThan(0);
    expect(GLOB_TESTS_PER_TICK).toBeLessThan(3200);
  });
});
