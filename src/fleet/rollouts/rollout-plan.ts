import { setImmediate as nextTick } from 'timers/promises';
import { globMatcher } from '../../core/auth/tool-pattern';
import { isNewerVersion, sameVersion } from './firmware-version';
import { FirmwareEntry, groupRank, Rollout } from './rollout-model';
import { inShare } from './stable-share';

/** Glob tests one resolution runs before it lets other work run: each is linear (`globMatcher`), so a tick stays well under a millisecond. */
export const GLOB_TESTS_PER_TICK = 256;

/** What the configuration answer knows of a device. */
export interface DeviceFacts {
  id: string;
  /** The principal that owns its id, when one does. */
  owner?: string;
  /** From its `User-Agent` (or its posted system information). */
  board?: string;
  version?: string;
}

/** The firmware block of a configuration answer (`force: 1` makes the firmware take a version that is not newer). */
export interface FirmwareOffer {
  version: string;
  url: string;
  force?: 1;
}

/** What the rollouts say for one device: each part decided by the rollout of highest precedence that has one. */
export interface DeviceOffer {
  firmware?: {
    rollout: string;
    firmware_id: string;
    version: string;
    /** Absent when the device already runs the version (or a newer one, without `force`): nothing to offer. */
    offer?: FirmwareOffer;
  };
  endpoint?: { rollout: string; websocket_url?: string; mqtt_endpoint?: string };
}

/** Whether the principal `owner` may reach device `deviceId`, owned by `deviceOwner` (the fleet's own rule, `Reachability.reaches`). */
export type ReachTest = (owner: string, deviceId: string, deviceOwner: string | undefined) => boolean;

interface CompiledRollout {
  rollout: Rollout;
  firmware?: FirmwareEntry;
  fitsBoard: (board: string | undefined) => boolean;
  /** Whether the group holds the device; globs count their tests in `work`. */
  holds: (device: DeviceFacts, work: { globTests: number }) => boolean;
  /** A share is of the owner's own devices; ids and globs of the devices the owner reaches. */
  ownDevicesOnly: boolean;
}

/**
 * Every active rollout, compiled once per snapshot of the store and ordered by precedence: the
 * more specific group first (explicit ids, then globs, then a share), and among equals the most
 * recently created. A device's firmware comes from the first rollout that holds it, may reach it
 * and has a firmware entry for its board; its endpoint from the first that holds it, may reach it
 * and moves endpoints. Paused and stopped rollouts offer nothing.
 */
export class RolloutPlan {
  private readonly ordered: CompiledRollout[];

  constructor(rollouts: readonly Rollout[], firmware: readonly FirmwareEntry[]) {
    const entries = new Map(firmware.map((entry) => [`${entry.owner}\0${entry.id}`, entry]));
    this.ordered = rollouts
      .filter((rollout) => rollout.state === 'active')
      .sort((a, b) => groupRank(b.group) - groupRank(a.group) || b.created_at.localeCompare(a.created_at) || a.id.localeCompare(b.id))
      .map((rollout) => compile(rollout, rollout.firmware_id === undefined ? undefined : entries.get(`${rollout.owner}\0${rollout.firmware_id}`)));
  }

  /** How many rollouts are active. */
  get size(): number {
    return this.ordered.length;
  }

  /** The offer for `device`; globs tested at most {@link GLOB_TESTS_PER_TICK} between yields. */
  async offerFor(device: DeviceFacts, reaches: ReachTest): Promise<DeviceOffer> {
    const offer: DeviceOffer = {};
    const work = { globTests: 0 };
    let yieldAt = GLOB_TESTS_PER_TICK;
    for (const compiled of this.ordered) {
      const { rollout, firmware } = compiled;
      const wantsFirmware = offer.firmware === undefined && firmware !== undefined && compiled.fitsBoard(device.board);
      const wantsEndpoint = offer.endpoint === undefined && rollout.endpoint !== undefined;
      if (!wantsFirmware && !wantsEndpoint) continue;
      const held = compiled.holds(device, work);
      if (work.globTests >= yieldAt) {
        yieldAt = work.globTests + GLOB_TESTS_PER_TICK;
        await nextTick();
      }
      if (!held) continue;
      const reached = compiled.ownDevicesOnly ? device.owner === rollout.owner : reaches(rollout.owner, device.id, device.owner);
      if (!reached) continue;
      if (wantsFirmware) offer.firmware = firmwareDecision(rollout, firmware!, device.version);
      if (wantsEndpoint) offer.endpoint = { rollout: rollout.id, ...rollout.endpoint };
      if (offer.firmware && offer.endpoint) break;
    }
    return offer;
  }
}

/**
 * The firmware block for a device of the rollout: offered when the firmware would take it as
 * an upgrade, or, with `force`, when it runs any other version; nothing when it already runs it.
 * A device that did not say its version is offered it (the firmware compares for itself).
 */
function firmwareDecision(rollout: Rollout, entry: FirmwareEntry, running: string | undefined): NonNullable<DeviceOffer['firmware']> {
  const decision = { rollout: rollout.id, firmware_id: entry.id, version: entry.version };
  if (running === undefined) return { ...decision, offer: { version: entry.version, url: entry.url, ...(rollout.force && { force: 1 as const }) } };
  if (isNewerVersion(entry.version, running)) return { ...decision, offer: { version: entry.version, url: entry.url } };
  if (rollout.force && !sameVersion(entry.version, running)) return { ...decision, offer: { version: entry.version, url: entry.url, force: 1 } };
  return decision;
}

function compile(rollout: Rollout, firmware: FirmwareEntry | undefined): CompiledRollout {
  const boards = firmware ? globMatcher(firmware.boards) : () => false;
  const anyBoard = firmware?.boards.includes('*') ?? false;
  const fitsBoard = (board: string | undefined) => (board === undefined ? anyBoard : boards(board));
  const { group } = rollout;
  if ('devices' in group) {
    const ids = new Set(group.devices);
    return { rollout, firmware, fitsBoard, ownDevicesOnly: false, holds: (device) => ids.has(device.id) };
  }
  if ('globs' in group) {
    const tests = group.globs.map((glob) => globMatcher([glob]));
    return {
      rollout,
      firmware,
      fitsBoard,
      ownDevicesOnly: false,
      holds: (device, work) =>
        tests.some((test) => {
          work.globTests++;
          return test(device.id);
        }),
    };
  }
  const { percent } = group;
  return { rollout, firmware, fitsBoard, ownDevicesOnly: true, holds: (device) => inShare(rollout.id, device.id, percent) };
}
