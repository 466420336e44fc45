import { AuditService, type FleetChangeRecord } from '../../core/audit/audit.service';
import { GatewayError } from '../../core/errors/gateway-error';
import type { FleetStores } from '../fleet-stores';
import type { Reachability } from '../reachability';
import { DeviceRollouts, MAX_RECORDS_PER_PRINCIPAL } from './device-rollouts';
import { firmwareInput, rolloutInput } from './rollout-input';
import { MemoryRolloutStore } from './rollout-store';

const OPS = { principal: 'name:ops' };
const OTHER = { principal: 'name:other' };
const BUILD = { id: 'fw', version: '2.0.0', url: 'https://fw.example.com/2.0.0.bin', boards: ['bread-*'] };

describe('DeviceRollouts', () => {
  let store: MemoryRolloutStore;
  let audit: FleetChangeRecord[];
  let rollouts: DeviceRollouts;
  /** Who owns each device id, as the fleet's directory says. */
  const owners = new Map<string, string>([['d1', 'name:ops']]);

  beforeEach(() => {
    store = new MemoryRolloutStore();
    audit = [];
    const fleet = { directory: { owner: async (id: string) => owners.get(id) } } as unknown as FleetStores;
    const reachability = {
      reaches: (caller: { principal?: string }, _id: string, device: { owner?: string }) => caller.principal === device.owner,
    } as unknown as Reachability;
    rollouts = new DeviceRollouts(store, fleet, reachability, {
      fleetChange: (record: FleetChangeRecord) => audit.push(record),
      auditedFleetChange: AuditService.prototype.auditedFleetChange,
    } as unknown as AuditService);
  });

  it('audits every change, taken or refused, with who made it', async () => {
    await rollouts.addFirmware(OPS, firmwareInput(BUILD));
    await rollouts.createRollout(OPS, rolloutInput({ id: 'r', firmware_id: 'fw', percent: 10 }));
    await rollouts.widen(OPS, 'r', 30);
    await expect(rollouts.widen(OPS, 'r', 20)).rejects.toThrow(/only widens/);
    await expect(rollouts.widen(OTHER, 'r', 40)).rejects.toThrow(/No rollout "r" of yours/);
    expect(audit).toEqual([
      { principal: 'name:ops', action: 'firmware_add', target: 'fw', outcome: 'ok', details: 'version 2.0.0' },
      { principal: 'name:ops', action: 'rollout_create', target: 'r', outcome: 'ok', details: 'firmware fw, percent group' },
      { principal: 'name:ops', action: 'rollout_widen', target: 'r', outcome: 'ok', details: 'percent -> 30' },
      { principal: 'name:ops', action: 'rollout_widen', target: 'r', outcome: 'INVALID_MESSAGE', details: 'percent -> 20' },
      { principal: 'name:other', action: 'rollout_widen', target: 'r', outcome: 'NOT_FOUND', details: 'percent -> 40' },
    ]);
  });

  it("offers a device its owner's rollout at once after a change made here, and nothing after it stops", async () => {
    await rollouts.addFirmware(OPS, firmwareInput(BUILD));
    await rollouts.createRollout(OPS, rolloutInput({ id: 'r', firmware_id: 'fw', percent: 100 }));
    expect((await rollouts.offerFor({ id: 'd1', userAgent: 'bread-compact-wifi/1.0.0' })).firmware?.offer).toEqual({ version: '2.0.0', url: BUILD.url });
    // A device of someone else's, and one nobody owns, are in no share of ops'.
    owners.set('d2', 'name:other');
    expect(await rollouts.offerFor({ id: 'd2', userAgent: 'bread-compact-wifi/1.0.0' })).toEqual({});
    expect(await rollouts.offerFor({ id: 'd3', userAgent: 'bread-compact-wifi/1.0.0' })).toEqual({});
    // The posted system information stands in for a missing User-Agent.
    expect((await rollouts.offerFor({ id: 'd1', board: 'bread-compact-wifi', version: '2.0.0' })).firmware?.offer).toBeUndefined();
    await rollouts.setState(OPS, 'r', 'stopped');
    expect(await rollouts.offerFor({ id: 'd1', userAgent: 'bread-compact-wifi/1.0.0' })).toEqual({});
  });

  it('refuses a rollout of firmware that is not yours, a removal of firmware in use, and more records than a principal may hold', async () => {
    await rollouts.addFirmware(OPS, firmwareInput(BUILD));
    await expect(rollouts.createRollout(OTHER, rolloutInput({ firmware_id: 'fw', percent: 1 }))).rejects.toThrow(/No firmware entry "fw" of yours/);
    await rollouts.createRollout(OPS, rolloutInput({ id: 'r', firmware_id: 'fw', percent: 1 }));
    await expect(rollouts.removeFirmware(OPS, 'fw')).rejects.toThrow(/offered by rollout "r": stop and remove it first/);
    await expect(rollouts.removeRollout(OPS, 'r')).rejects.toThrow(/stop it before removing it/);
    await rollouts.setState(OPS, 'r', 'stopped');
    await rollouts.removeRollout(OPS, 'r');
    await rollouts.removeFirmware(OPS, 'fw');
    for (let i = 0; i < MAX_RECORDS_PER_PRINCIPAL; i++) await rollouts.addFirmware(OPS, firmwareInput({ ...BUILD, id: `fw-${i}` }));
    const refused = rollouts.addFirmware(OPS, firmwareInput({ ...BUILD, id: 'one-more' }));
    await expect(refused).rejects.toBeInstanceOf(GatewayError);
    await expect(refused).rejects.toThrow(/You hold 50 firmware entries/);
    await expect(rollouts.addFirmware(OTHER, firmwareInput({ ...BUILD, id: 'theirs' }))).resolves.toMatchObject({ owner: 'name:other' });
  });

  it('refuses records on nobody’s behalf', async () => {
    await expect(rollouts.listRollouts({})).rejects.toThrow(/belong to a principal/);
  });
});
