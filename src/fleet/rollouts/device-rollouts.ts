import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { AuditService } from '../../core/audit/audit.service';
import { GatewayError, GatewayErrorCode } from '../../core/errors/gateway-error';
import { newId } from '../../core/new-id';
import type { FleetCaller } from '../device-push';
import { FLEET_STORES, FleetStores } from '../fleet-stores';
import { Reachability } from '../reachability';
import { parseUserAgent } from './firmware-version';
import { FirmwareChange, FirmwareInput, percentOf, RolloutInput } from './rollout-input';
import { FirmwareEntry, groupKind, Rollout, RolloutState } from './rollout-model';
import { DeviceOffer, RolloutPlan } from './rollout-plan';
import { RecordTable, Revised, ROLLOUT_STORE, RolloutStore, WriteOutcome } from './rollout-store';

/** Firmware entries the store holds at most, all principals together. */
export const MAX_FIRMWARE_ENTRIES = 500;
/** Rollouts the store holds at most (stopped ones included until removed): each active one is checked at every configuration request. */
export const MAX_ROLLOUTS = 200;
/** Of which one principal may hold, so that one cannot fill the store for the others. */
export const MAX_RECORDS_PER_PRINCIPAL = 50;
/** How long an instance answers devices from the rollouts it last read: a change reaches every instance within this. */
export const PLAN_TTL_MS = 1000;
/** Attempts at a change that found the record changed under it (another operator, another instance) before it gives up. */
const WRITE_ATTEMPTS = 3;

/** What a device says of itself at its configuration request. */
export interface DeviceReport {
  id: string;
  userAgent?: string;
  /** From the posted system information, when the `User-Agent` does not say. */
  board?: string;
  version?: string;
}

/**
 * Firmware rollouts and endpoint moves: the records principals manage (over HTTP and as tools,
 * each change audited), and the offer each device's configuration answer makes from them.
 *
 * Who manages what: a firmware entry and a rollout belong to the principal that made them, and
 * only they see and change them. A rollout reaches only devices its owner may reach (owned, or
 * granted by its token's `devices` globs); a share (`percent`) is of the owner's own devices.
 * So no token can offer firmware to, or move, another principal's devices.
 */
@Injectable()
export class DeviceRollouts implements OnApplicationShutdown {
  private plan?: { at: number; plan: Promise<RolloutPlan> };

  constructor(
    @Inject(ROLLOUT_STORE) private readonly store: RolloutStore,
    @Inject(FLEET_STORES) private readonly fleet: FleetStores,
    private readonly reachability: Reachability,
    private readonly audit: AuditService,
  ) {}

  /** What the rollouts offer `device`: a firmware (or that it already runs its group's), an endpoint. */
  async offerFor(device: DeviceReport, owner?: string): Promise<DeviceOffer> {
    const running = parseUserAgent(device.userAgent);
    const plan = await this.currentPlan();
    if (plan.size === 0) return {};
    const deviceOwner = owner ?? (await this.fleet.directory.owner(device.id));
    return plan.offerFor(
      { id: device.id, owner: deviceOwner, board: running.board ?? device.board, version: running.version ?? device.version },
      (principal, id, ownerOfDevice) => this.reachability.reaches({ principal }, id, { owner: ownerOfDevice }),
    );
  }

  listFirmware(caller: FleetCaller): Promise<FirmwareEntry[]> {
    return this.mine(this.store.firmware, caller);
  }

  async firmware(caller: FleetCaller, id: string): Promise<FirmwareEntry> {
    return this.one(this.store.firmware, caller, id, 'firmware entry');
  }

  addFirmware(caller: FleetCaller, input: FirmwareInput): Promise<FirmwareEntry> {
    return this.audited(caller, 'firmware_add', input.id ?? 'new', `version ${input.version}`, async (owner) => {
      const now = new Date().toISOString();
      const entry: FirmwareEntry = {
        id: input.id ?? newId(),
        version: input.version,
        url: input.url,
        boards: input.boards,
        ...(input.notes !== undefined && { notes: input.notes }),
        owner,
        created_at: now,
        updated_at: now,
        revision: 1,
      };
      await this.create(this.store.firmware, entry, MAX_FIRMWARE_ENTRIES, 'firmware entries');
      return entry;
    });
  }

  changeFirmware(caller: FleetCaller, id: string, change: FirmwareChange): Promise<FirmwareEntry> {
    return this.audited(caller, 'firmware_change', id, Object.keys(change).join(', '), () =>
      this.update(this.store.firmware, caller, id, 'firmware entry', (entry) => ({ ...entry, ...change })),
    );
  }

  /** Removes an entry no rollout offers any more (stop, then remove, the rollouts that do). */
  removeFirmware(caller: FleetCaller, id: string): Promise<FirmwareEntry> {
    return this.audited(caller, 'firmware_remove', id, undefined, async (owner) => {
      const entry = await this.firmware(caller, id);
      const using = (await this.store.rollouts.all()).filter((rollout) => rollout.owner === owner && rollout.firmware_id === id);
      if (using.length > 0)
        throw new GatewayError(
          GatewayErrorCode.INVALID_MESSAGE,
          `Firmware entry "${id}" is offered by rollout${using.length > 1 ? 's' : ''} ${using.map((rollout) => `"${rollout.id}"`).join(', ')}: stop and remove ${using.length > 1 ? 'them' : 'it'} first`,
        );
      await this.write(() => this.store.firmware.remove(id, entry.revision), 'firmware entry', id);
      return entry;
    });
  }

  listRollouts(caller: FleetCaller): Promise<Rollout[]> {
    return this.mine(this.store.rollouts, caller);
  }

  rollout(caller: FleetCaller, id: string): Promise<Rollout> {
    return this.one(this.store.rollouts, caller, id, 'rollout');
  }

  createRollout(caller: FleetCaller, input: RolloutInput): Promise<Rollout> {
    const details = [input.firmware_id && `firmware ${input.firmware_id}`, input.endpoint && 'endpoint', `${groupKind(input.group)} group`]
      .filter(Boolean)
      .join(', ');
    return this.audited(caller, 'rollout_create', input.id ?? 'new', details, async (owner) => {
      if (input.firmware_id !== undefined) await this.firmware(caller, input.firmware_id);
      const now = new Date().toISOString();
      const rollout: Rollout = {
        id: input.id ?? newId(),
        ...(input.firmware_id !== undefined && { firmware_id: input.firmware_id }),
        ...(input.force && { force: true }),
        ...(input.endpoint && { endpoint: input.endpoint }),
        group: input.group,
        state: input.state,
        owner,
        created_at: now,
        updated_at: now,
        revision: 1,
      };
      await this.create(this.store.rollouts, rollout, MAX_ROLLOUTS, 'rollouts');
      return rollout;
    });
  }

  /** Widens a share: the new percent is at least the old one, so no device that was in leaves. */
  widen(caller: FleetCaller, id: string, percent: unknown): Promise<Rollout> {
    const wanted = percentOf(percent);
    return this.audited(caller, 'rollout_widen', id, `percent -> ${wanted}`, () =>
      this.update(this.store.rollouts, caller, id, 'rollout', (rollout) => {
        if (!('percent' in rollout.group))
          throw new GatewayError(
            GatewayErrorCode.INVALID_MESSAGE,
            `Rollout "${id}" names its devices by ${groupKind(rollout.group)}: only a percent group widens`,
          );
        if (rollout.state === 'stopped') throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, `Rollout "${id}" is stopped: start a new one`);
        if (wanted < rollout.group.percent)
          throw new GatewayError(
            GatewayErrorCode.INVALID_MESSAGE,
            `Rollout "${id}" is at ${rollout.group.percent} %: a rollout only widens (narrowing would move devices back), pause or stop it instead`,
          );
        return { ...rollout, group: { percent: wanted } };
      }),
    );
  }

  /** Pauses, resumes or stops a rollout; a stopped one stays stopped. */
  setState(caller: FleetCaller, id: string, state: RolloutState): Promise<Rollout> {
    const action = state === 'active' ? 'rollout_resume' : state === 'paused' ? 'rollout_pause' : 'rollout_stop';
    return this.audited(caller, action, id, undefined, () =>
      this.update(this.store.rollouts, caller, id, 'rollout', (rollout) => {
        if (rollout.state === 'stopped' && state !== 'stopped')
          throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, `Rollout "${id}" is stopped for good: start a new one`);
        return { ...rollout, state };
      }),
    );
  }

  /** Removes a stopped rollout (its record is kept until then, for the record). */
  removeRollout(caller: FleetCaller, id: string): Promise<Rollout> {
    return this.audited(caller, 'rollout_remove', id, undefined, async () => {
      const rollout = await this.rollout(caller, id);
      if (rollout.state !== 'stopped')
        throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, `Rollout "${id}" is ${rollout.state}: stop it before removing it`);
      await this.write(() => this.store.rollouts.remove(id, rollout.revision), 'rollout', id);
      return rollout;
    });
  }

  async onApplicationShutdown(): Promise<void> {
    await this.store.close();
  }

  /** The plan of the rollouts as last read, read again past {@link PLAN_TTL_MS}; one read at a time whatever the number of devices asking. */
  private currentPlan(): Promise<RolloutPlan> {
    const now = Date.now();
    if (!this.plan || now - this.plan.at >= PLAN_TTL_MS) {
      const plan = Promise.all([this.store.rollouts.all(), this.store.firmware.all()]).then(([rollouts, firmware]) => new RolloutPlan(rollouts, firmware));
      this.plan = { at: now, plan };
      // A failed read is not kept: the next request reads again.
      plan.catch(() => {
        if (this.plan?.plan === plan) this.plan = undefined;
      });
    }
    return this.plan.plan;
  }

  private async mine<T extends Revised & { owner: string; created_at: string }>(table: RecordTable<T>, caller: FleetCaller): Promise<T[]> {
    const owner = ownerOf(caller);
    return (await table.all()).filter((record) => record.owner === owner).sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
  }

  /** The caller's record; another principal's looks absent. */
  private async one<T extends Revised & { owner: string }>(table: RecordTable<T>, caller: FleetCaller, id: string, kind: string): Promise<T> {
    const owner = ownerOf(caller);
    const record = await table.get(id);
    if (!record || record.owner !== owner) throw new GatewayError(GatewayErrorCode.NOT_FOUND, `No ${kind} "${id}" of yours`);
    return record;
  }

  private async create<T extends Revised & { owner: string }>(table: RecordTable<T>, record: T, max: number, kinds: string): Promise<void> {
    const yours = (await table.all()).filter((stored) => stored.owner === record.owner).length;
    if (yours >= MAX_RECORDS_PER_PRINCIPAL)
      throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, `You hold ${MAX_RECORDS_PER_PRINCIPAL} ${kinds}, the most one principal may: remove some first`);
    const outcome = await table.create(record, max);
    if (outcome === 'exists') throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, `The id "${record.id}" is taken: choose another, or leave id out`);
    if (outcome === 'full') throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, `The gateway holds ${max} ${kinds}, its most: remove some first`);
    this.plan = undefined;
  }

  /** Reads, changes and writes back at the revision read; again (up to {@link WRITE_ATTEMPTS}) when someone changed it in between. */
  private async update<T extends Revised & { owner: string; updated_at: string }>(
    table: RecordTable<T>,
    caller: FleetCaller,
    id: string,
    kind: string,
    change: (record: T) => T,
  ): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const record = await this.one(table, caller, id, kind);
      const changed = { ...change(record), id, owner: record.owner, updated_at: new Date().toISOString(), revision: record.revision + 1 };
      const outcome = await table.replace(changed);
      if (outcome === 'ok') {
        this.plan = undefined;
        return changed;
      }
      if (outcome === 'gone') throw new GatewayError(GatewayErrorCode.NOT_FOUND, `No ${kind} "${id}" of yours`);
      if (attempt >= WRITE_ATTEMPTS)
        throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, `The ${kind} "${id}" is being changed by someone else at the same time: look again and retry`);
    }
  }

  private async write(remove: () => Promise<WriteOutcome>, kind: string, id: string): Promise<void> {
    const outcome = await remove();
    if (outcome === 'gone') throw new GatewayError(GatewayErrorCode.NOT_FOUND, `No ${kind} "${id}" of yours`);
    if (outcome === 'stale') throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, `The ${kind} "${id}" was changed meanwhile: look again and retry`);
    this.plan = undefined;
  }

  /** Runs a change on the caller's behalf and writes its audit line, whether it took or was refused. */
  private audited<T extends { id: string }>(
    caller: FleetCaller,
    action: string,
    target: string,
    details: string | undefined,
    change: (owner: string) => Promise<T>,
  ): Promise<T> {
    return this.audit.auditedFleetChange(
      { principal: caller.principal, action, target, details },
      () => change(ownerOf(caller)),
      (done) => done.id,
    );
  }
}

/** The principal records are kept under: rollouts belong to someone, so an in-process caller on nobody's behalf has none. */
function ownerOf(caller: FleetCaller): string {
  if (caller.principal === undefined)
    throw new GatewayError(GatewayErrorCode.UNAUTHORIZED, 'Firmware entries and rollouts belong to a principal: call with a token');
  return caller.principal;
}
