import { Inject, Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'crypto';
import { Subject } from 'rxjs';
import { setImmediate } from 'timers/promises';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { globMatcher } from '../core/auth/tool-pattern';
import { GatewayError, GatewayErrorCode } from '../core/errors/gateway-error';
import { DrainService } from '../core/lifecycle/drain.service';
import { isDeviceGlob } from './device-id';
import type { DeviceLink, QueuedPush } from './device-link';
import type { DevicePush, FleetCaller, GivenUpPush, PushOutcome, PushReceipt, ReleasedDevice, SayRequest } from './device-push';
import { FLEET_STORES, FleetStores } from './fleet-stores';
import type { HeldFor, HeldPush, HoldLimits, HoldRefusal } from './held-pushes';
import { LocalDevices } from './local-devices';
import { checkDeviceId, Reachability } from './reachability';
import { PushReceipts } from './receipts/push-receipts';
import type { PushRecord } from './receipts/push-state';
import { ReplicaMessaging } from './replicas/replica-messaging';

/** How long a push waits for the instance holding the device to say it queued it. */
const REMOTE_PUSH_TIMEOUT_MS = 5000;
/** How long a push to a device busy with a turn may take to reach it before its receipt says `queued` rather than `spoken`. */
const SETTLE_MS = 500;
/** Globs one fan-out may name. */
const MAX_GLOBS_PER_PUSH = 16;
/** Devices a fan-out speaks to before it lets other work run. */
const PUSHES_PER_TICK = 256;
/** Device ids a fan-out's globs are tested against before it lets other work run (each test is at most the glob's length times the id's). */
const GLOB_TESTS_PER_TICK = 2048;

/** The messages pushes send between instances: a fan-out's devices there, a pushed turn, and "a push was just held for your device". */
const SAY = 'say';
const TURN = 'turn';
const DRAIN = 'drain';

/** The devices of a fan-out that one instance holds, each with the `turn_id` of its push. */
type SayBatch = { device: string; turnId: string }[];

/** What a push asks, without where it goes. */
type Push = Omit<SayRequest, 'origin'>;

/** A device a push did not reach at once: waiting behind its turn in flight (`queued`), or not reached, with why. */
type SayReport = { device: string; queued: true } | { device: string; code: string; message: string };

/** A fan-out's devices on the instance that holds them, as it travels there: the push, and who asked (to hold it again if need be). */
interface RemoteSay extends Push {
  devices: SayBatch;
  principal?: string;
}

interface RemoteTurn extends Pick<Push, 'text' | 'holdS'> {
  device: string;
  turnId: string;
  principal?: string;
}

/** The pushes held for a device being delivered to one of its connections; `again` when more were held meanwhile. */
interface HeldDrain {
  again: boolean;
}

/**
 * Speech pushed to devices, wherever their connections are: one device or a fan-out to many
 * (ids and globs), pushed turns, and pushes held for devices that are offline. Each instance
 * speaks to the devices it holds: this one at once, another through one message for all of its
 * devices. A receipt says only what happened: `spoken` once the push reached the device,
 * `queued` while it waits behind the device's turn, `held` once stored for its next connection,
 * where held pushes are delivered one at a time as the device's queue frees.
 *
 * Each push also has a delivery receipt ({@link PushReceipts}), opened here before it goes out:
 * the instance that holds or refuses it moves it to `held` or `refused`, the instance where the
 * device is moves it to `sent`, then `spoken` or `interrupted` as the device's link says it ended.
 */
@Injectable()
export class DevicePushes implements DevicePush {
  private readonly logger = new Logger('Fleet');
  /** Held pushes being delivered, by connection. */
  private readonly drains = new Map<string, HeldDrain>();
  private readonly releasedStream = new Subject<ReleasedDevice>();
  readonly released = this.releasedStream.asObservable();

  constructor(
    @Inject(FLEET_STORES) private readonly stores: FleetStores,
    private readonly reachability: Reachability,
    private readonly local: LocalDevices,
    private readonly messaging: ReplicaMessaging,
    private readonly drain: DrainService,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    private readonly receipts: PushReceipts,
  ) {
    local.attached.subscribe((link) => this.drainHeld(link));
    messaging.handle(SAY, (message: RemoteSay) => this.speakHere(message.devices, message, { principal: message.principal }));
    messaging.handle(TURN, (message: RemoteTurn) => this.startHere(message.device, message.turnId, message, { principal: message.principal }));
    messaging.on(DRAIN, ({ device }: { device: string }) => {
      const link = this.local.get(device);
      if (link) this.drainHeld(link);
    });
  }

  deviceOfConnection(connectionId: string): string | undefined {
    return this.local.deviceOfConnection(connectionId);
  }

  mayReach(caller: FleetCaller, deviceId: string): Promise<boolean> {
    return this.reachability.mayReach(caller, deviceId);
  }

  keepOwned(deviceId: string, untilMs: number): Promise<void> {
    return this.reachability.keepOwned(deviceId, untilMs);
  }

  async expire({ deviceId, pushId, reminderId, reason }: GivenUpPush, caller: FleetCaller): Promise<void> {
    await this.receipts.open([{ id: pushId, device: deviceId, kind: reminderId !== undefined ? 'reminder' : 'say', by: caller.principal ?? '', reminderId }]);
    await this.receipts.move(pushId, { state: 'expired', reason });
  }

  /** A `say` to one device: a fan-out of one, so that both take one way. */
  async say(deviceId: string, request: SayRequest, caller: FleetCaller): Promise<PushReceipt> {
    checkDeviceId(deviceId);
    const [outcome] = await this.sayToEach([deviceId], request, caller);
    if ('error' in outcome) throw outcome.pushId === undefined ? outcome.error : refusedPush(outcome.error, outcome.pushId);
    return outcome.receipt;
  }

  /**
   * One `say` to many devices, named by id or by glob (`kitchen-*`, matched against the online
   * devices the caller may reach), each answered on its own in the order named. A fan-out costs
   * a message per instance, not one per device. A device offline, or gone before its instance
   * spoke, is held when `holdS` asks for it.
   */
  async sayToEach(targets: readonly unknown[], request: SayRequest, caller: FleetCaller): Promise<PushOutcome[]> {
    this.checkRequest(request);
    const devices = await this.devicesOf(targets, caller);
    if (request.pushId !== undefined && devices.length !== 1)
      throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, 'A push with its own receipt id goes to one device');
    const pushIds = new Map(devices.map((device) => [device, request.pushId ?? newPushId()]));
    const batches = new Map<string, SayBatch>();
    const unreached: string[] = [];
    /** The receipts to open, by the instance that will move them (`''`: this one, for the devices it holds or does not find). */
    const records = new Map<string, Parameters<PushReceipts['open']>[0]>();
    for (const device of devices) {
      const entry = this.reachability.visibleDevice(caller, device);
      const mover = entry && entry.instance !== this.messaging.instanceId ? entry.instance : '';
      const opening = records.get(mover) ?? [];
      records.set(mover, opening);
      opening.push(this.recordOf(device, pushIds.get(device)!, request, caller, entry?.owner ?? entry?.principal));
      if (!entry) unreached.push(device);
      else {
        const batch = batches.get(entry.instance) ?? [];
        batches.set(entry.instance, batch);
        batch.push({ device, turnId: pushIds.get(device)! });
      }
    }
    // This instance's moves of a receipt wait for its creation, so its devices are spoken to at
    // once; another instance's devices are sent their pushes once their receipts are stored.
    const opened = new Map([...records].map(([mover, opening]) => [mover, this.receipts.open(opening)]));
    const outcomes = new Map<string, PushOutcome>();
    await Promise.all(
      [...batches].map(async ([instance, batch]) => {
        const here = instance === this.messaging.instanceId;
        if (!here) await opened.get(instance);
        const reports = here ? await this.speakHere(batch, request, caller) : await this.speakElsewhere(instance, batch, request, caller);
        const reported = new Map(reports.map((report) => [report.device, report]));
        for (const { device, turnId } of batch) {
          const report = reported.get(device);
          if (!report) outcomes.set(device, { device, receipt: { delivered: 'spoken', turnId } });
          else if ('queued' in report) outcomes.set(device, { device, receipt: { delivered: 'queued', turnId } });
          else if (report.code === GatewayErrorCode.DEVICE_OFFLINE) unreached.push(device);
          else outcomes.set(device, { device, error: new GatewayError(report.code as GatewayErrorCode, report.message) });
        }
      }),
    );
    await Promise.all(
      unreached.map((device) =>
        this.hold('say', device, pushIds.get(device)!, request, caller).then(
          (receipt) => outcomes.set(device, { device, receipt }),
          (error: unknown) => outcomes.set(device, { device, error: asGatewayError(error) }),
        ),
      ),
    );
    // Every receipt is stored before the caller hears of its id.
    await Promise.all(opened.values());
    const refused: Promise<unknown>[] = [];
    for (const outcome of outcomes.values()) {
      if (!('error' in outcome)) continue;
      const pushId = pushIds.get(outcome.device)!;
      outcome.pushId = pushId;
      if (request.reminderId === undefined) refused.push(this.receipts.move(pushId, { state: 'refused', reason: outcome.error.code }));
    }
    await Promise.all(refused);
    return devices.map((device) => outcomes.get(device)!);
  }

  /** Starts a turn on the device as if its user had said `text`; its answer is spoken there. */
  async startTurn(deviceId: string, request: Pick<SayRequest, 'text' | 'holdS'>, caller: FleetCaller): Promise<PushReceipt> {
    checkDeviceId(deviceId);
    this.checkRequest(request);
    const turnId = newPushId();
    const entry = this.reachability.visibleDevice(caller, deviceId);
    await this.receipts.open([{ ...this.recordOf(deviceId, turnId, request, caller, entry?.owner ?? entry?.principal), kind: 'turn' }]);
    try {
      return await this.startTurnAs(deviceId, turnId, entry, request, caller);
    } catch (error) {
      await this.receipts.move(turnId, { state: 'refused', reason: asGatewayError(error).code });
      throw error instanceof GatewayError ? refusedPush(error, turnId) : error;
    }
  }

  private async startTurnAs(
    deviceId: string,
    turnId: string,
    entry: ReturnType<Reachability['visibleDevice']>,
    request: Pick<SayRequest, 'text' | 'holdS'>,
    caller: FleetCaller,
  ): Promise<PushReceipt> {
    if (entry) {
      try {
        const report =
          entry.instance === this.messaging.instanceId
            ? await this.startHere(deviceId, turnId, request, caller)
            : await this.messaging.request<SayReport | undefined>(
                entry.instance,
                TURN,
                { device: deviceId, turnId, text: request.text, holdS: request.holdS, principal: caller.principal } satisfies RemoteTurn,
                { signal: AbortSignal.timeout(REMOTE_PUSH_TIMEOUT_MS), about: entry },
              );
        if (!report) return { delivered: 'spoken', turnId };
        if ('queued' in report) return { delivered: 'queued', turnId };
        throw new GatewayError(report.code as GatewayErrorCode, report.message);
      } catch (error) {
        // It left between the lookup and the delivery: held, if the caller asked for that.
        if (!leftBeforeDelivery(error)) throw error instanceof GatewayError ? error : notAnswered(deviceId);
      }
    }
    return this.hold('turn', deviceId, turnId, request, caller);
  }

  /**
   * The owner gives an offline device's id up: what was held for it is dropped, its reminders are
   * cancelled (by whoever listens to {@link released}), and another principal may connect as it.
   */
  async release(deviceId: string, caller: FleetCaller): Promise<{ held: number }> {
    const owner = await this.reachability.disown(deviceId, caller);
    const dropped = await this.stores.held.drop(deviceId, owner);
    await Promise.all(dropped.map((push) => this.receipts.move(push.turnId, { state: 'expired', reason: 'released' })));
    this.releasedStream.next({ deviceId, owner });
    this.logger.log(`Device id ${deviceId} released by its owner (${dropped.length} held pushes dropped)`);
    return { held: dropped.length };
  }

  private async hold(kind: HeldPush['kind'], deviceId: string, turnId: string, request: Push, caller: FleetCaller): Promise<PushReceipt> {
    if (!request.holdS) throw offline(deviceId);
    // Only for an id with an owner the caller reaches: a push held for an id nobody owns could be
    // spoken by whichever principal's device takes that id first.
    const owner = await this.reachability.ownerFor(caller, deviceId);
    if (owner === undefined) throw offline(deviceId);
    const push: HeldPush = {
      kind,
      turnId,
      text: request.text,
      interrupt: request.interrupt,
      reminderId: request.reminderId,
      expiresAt: Date.now() + request.holdS * 1000,
      by: caller.principal ?? '',
    };
    const limits = { perDevice: this.config.fleet.holdMaxCount, perPrincipal: this.config.fleet.holdMaxPerPrincipal };
    const refusal = await this.stores.held.hold({ owner, deviceId }, push, limits);
    if (refusal) throw holdRefused(refusal, deviceId, limits);
    await this.receipts.move(turnId, { state: 'held', expiresAt: push.expiresAt, owner });
    await this.stores.directory.keepOwned(deviceId, owner, push.expiresAt);
    // It may have connected since it was found offline: its connection delivers it now.
    const entry = this.stores.directory.lookup(deviceId);
    const link = this.local.get(deviceId);
    if (link) this.drainHeld(link);
    else if (entry) void this.messaging.notify(entry.instance, DRAIN, { device: deviceId });
    return { delivered: 'held', turnId };
  }

  /**
   * The devices a fan-out names, in its order, each once: an id as it is, a glob as the online
   * devices it matches that `caller` may reach, by id. The work is bounded: at most
   * {@link MAX_GLOBS_PER_PUSH} globs, each tested once against each device the caller reaches, a
   * test never backtracking (`globMatcher`), and other clients served every
   * {@link GLOB_TESTS_PER_TICK} tests.
   */
  private async devicesOf(targets: readonly unknown[], caller: FleetCaller): Promise<string[]> {
    const { pushMaxDevices } = this.config.fleet;
    if (!Array.isArray(targets) || targets.length === 0 || targets.length > pushMaxDevices) {
      throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, `devices must be a list of 1 to ${pushMaxDevices} device ids or globs (FLEET_PUSH_MAX_DEVICES)`);
    }
    const devices = new Set<string>();
    let visible: string[] | undefined;
    let globs = 0;
    let tests = 0;
    for (const target of targets) {
      if (!isDeviceGlob(target)) devices.add(checkDeviceId(target));
      else {
        // Each glob is matched against every device the caller reaches: their number is what is bounded.
        if (++globs > MAX_GLOBS_PER_PUSH) throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, `devices may hold at most ${MAX_GLOBS_PER_PUSH} globs`);
        visible ??= this.reachability
          .visibleDevices(caller)
          .map((entry) => entry.id)
          .sort();
        const matches = globMatcher([target]);
        for (const id of visible) {
          if (matches(id)) devices.add(id);
          if (++tests % GLOB_TESTS_PER_TICK === 0) await setImmediate();
        }
      }
      if (devices.size > pushMaxDevices) {
        throw new GatewayError(
          GatewayErrorCode.INVALID_MESSAGE,
          `devices names more than the ${pushMaxDevices} devices one push may reach (FLEET_PUSH_MAX_DEVICES)`,
        );
      }
    }
    return [...devices];
  }

  /** The bounds that come from the settings; the shape was checked against the push's schema (`push-request.ts`). */
  private checkRequest(request: Push): void {
    const { pushMaxChars, holdMaxS } = this.config.fleet;
    if (typeof request.text !== 'string' || request.text.trim() === '')
      throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, 'text must be a non-empty string');
    if (request.text.length > pushMaxChars) {
      throw new GatewayError(
        GatewayErrorCode.PAYLOAD_TOO_LARGE,
        `text is ${request.text.length} characters, over the ${pushMaxChars} a push may carry (FLEET_PUSH_MAX_CHARS)`,
      );
    }
    const { holdS } = request;
    if (holdS !== undefined && (typeof holdS !== 'number' || !Number.isFinite(holdS) || holdS < 0 || holdS > holdMaxS)) {
      throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, `hold_s must be a number of seconds from 0 to ${holdMaxS} (FLEET_HOLD_MAX_S)`);
    }
  }

  /**
   * Speaks to the devices of `batch` this instance holds; reports those it did not reach at once.
   * It lets other work run every {@link PUSHES_PER_TICK} devices, so a fan-out to thousands does
   * not hold up the sockets it is not writing to. A draining instance takes no pushes: they are
   * held (or refused) as for an offline device, which reconnects elsewhere.
   */
  private async speakHere(batch: SayBatch, request: Push, caller: FleetCaller): Promise<SayReport[]> {
    const reports: SayReport[] = [];
    const queued: { device: string; turnId: string; push: QueuedPush }[] = [];
    for (let index = 0; index < batch.length; index++) {
      const { device, turnId } = batch[index];
      try {
        const link = this.drain.isDraining ? undefined : this.local.get(device);
        if (!link) throw offline(device);
        queued.push({ device, turnId, push: link.say(turnId, request.text, { interrupt: request.interrupt, reminderId: request.reminderId }) });
      } catch (error) {
        reports.push(failureReport(device, error));
      }
      if ((index + 1) % PUSHES_PER_TICK === 0) await setImmediate();
    }
    for (const { turnId, push } of queued) this.follow(turnId, push);
    const settled = await settle(queued.map(({ push }) => push));
    settled.forEach((outcome, index) => {
      const { device, turnId, push } = queued[index];
      if (outcome === 'queued') {
        reports.push({ device, queued: true });
        this.holdIfUnheard(push, 'say', device, turnId, request, caller);
      } else if (outcome !== 'spoken') reports.push(failureReport(device, outcome));
    });
    return reports;
  }

  /** Starts a pushed turn on a device this instance holds; how far it got, as a `say` reports it (nothing: spoken). */
  private async startHere(deviceId: string, turnId: string, request: Pick<Push, 'text' | 'holdS'>, caller: FleetCaller): Promise<SayReport | undefined> {
    const link = this.drain.isDraining ? undefined : this.local.get(deviceId);
    if (!link) throw offline(deviceId);
    const push = link.startTurn(turnId, request.text);
    this.follow(turnId, push);
    const [outcome] = await settle([push]);
    if (outcome === 'spoken') return undefined;
    if (outcome !== 'queued') throw outcome;
    this.holdIfUnheard(push, 'turn', deviceId, turnId, request, caller);
    return { device: deviceId, queued: true };
  }

  /** A push answered `queued` whose device leaves before its turn: held again when the caller asked for holding, else dropped, said so, and its receipt `interrupted`. */
  private holdIfUnheard(push: QueuedPush, kind: HeldPush['kind'], deviceId: string, turnId: string, request: Push, caller: FleetCaller): void {
    push.started.catch(() =>
      (request.holdS ? this.hold(kind, deviceId, turnId, request, caller) : Promise.reject(offline(deviceId))).catch((error: Error) => {
        this.logger.warn(`A push queued for device ${deviceId} (${turnId}) was not heard, the device left first, and not held again: ${error.message}`);
        return this.receipts.move(turnId, { state: 'interrupted', reason: 'disconnected' });
      }),
    );
  }

  /** Moves the receipt of a push taken by a device here: `sent` once it reached the device, then how it ended there. Its failing to reach the device is for whoever sent it (held again, or refused). */
  private follow(pushId: string, push: QueuedPush): void {
    push.started.then(
      async () => {
        await this.receipts.move(pushId, { state: 'sent' });
        const end = await push.finished;
        await this.receipts.move(pushId, end.state === 'spoken' ? { state: 'spoken' } : { state: 'interrupted', reason: end.reason });
      },
      () => undefined,
    );
  }

  /** A new receipt's record: what it is, to whom, who asked. */
  private recordOf(
    device: string,
    id: string,
    request: Push,
    caller: FleetCaller,
    owner: string | undefined,
  ): Omit<PushRecord, 'state' | 'history' | 'expiresAt'> {
    return {
      id,
      device,
      kind: request.reminderId !== undefined ? 'reminder' : 'say',
      by: caller.principal ?? '',
      ...(owner !== undefined && { owner }),
      ...(request.reminderId !== undefined && { reminderId: request.reminderId }),
    };
  }

  /** Has `instance` speak to the devices of `batch` it holds, in one message; the ones it did not reach at once, with why. */
  private async speakElsewhere(instance: string, batch: SayBatch, request: Push, caller: FleetCaller): Promise<SayReport[]> {
    const message: RemoteSay = {
      devices: batch,
      text: request.text,
      interrupt: request.interrupt,
      reminderId: request.reminderId,
      holdS: request.holdS,
      principal: caller.principal,
    };
    try {
      return await this.messaging.request<SayReport[]>(instance, SAY, message, { signal: AbortSignal.timeout(REMOTE_PUSH_TIMEOUT_MS) });
    } catch (error) {
      return batch.map(({ device }) =>
        leftBeforeDelivery(error)
          ? { device, code: GatewayErrorCode.DEVICE_OFFLINE, message: offline(device).message }
          : { device, code: GatewayErrorCode.TOOL_UNAVAILABLE, message: notAnswered(device).message },
      );
    }
  }

  /**
   * Delivers the pushes held for the device to `link`, one at a time, each once the one before it
   * reached the device and the queue has room: held pushes never crowd out the device's own turns,
   * and none is refused for the queue's bound. Only a connection of the id's owner gets them. A
   * push is taken off the store once delivered, so a connection that drops leaves the rest held.
   */
  private drainHeld(link: DeviceLink): void {
    if (link.owner === undefined || link.owner !== (link.principal ?? '')) return;
    const running = this.drains.get(link.connectionId);
    if (running) {
      running.again = true;
      return;
    }
    const to: HeldFor = { owner: link.owner, deviceId: link.deviceId };
    const drain: HeldDrain = { again: false };
    this.drains.set(link.connectionId, drain);
    const current = () => this.local.get(link.deviceId) === link;
    const work = (async () => {
      try {
        do {
          drain.again = false;
          for (let push = await this.stores.held.next(to); push && current(); push = await this.stores.held.next(to)) {
            // A receipt already final: its hold ran out as the push was taken, so it is not said.
            if (await this.receipts.takeHeld(push.turnId)) {
              const queued = await deliverHeld(link, push).catch(async (error: unknown) => {
                // The device left first: the push stays held, and so does its receipt.
                await this.receipts.returnHeld(push.turnId, push.expiresAt);
                throw error;
              });
              this.follow(push.turnId, queued);
            }
            await this.stores.held.done(to, push);
          }
        } while (drain.again && current());
      } catch (error) {
        this.logger.warn(`Held pushes for device ${link.deviceId} stay held for its next connection: ${(error as Error).message}`);
      } finally {
        this.drains.delete(link.connectionId);
      }
    })();
    this.stores.track(work);
  }
}

/**
 * What became of each push within {@link SETTLE_MS}: `spoken` once it reached the device,
 * `queued` if it still waits behind a turn, or why it never will (its device left first).
 */
async function settle(pushes: QueuedPush[]): Promise<('spoken' | 'queued' | Error)[]> {
  let timer: NodeJS.Timeout | undefined;
  const late = pushes.some((push) => push.waiting) ? new Promise<'queued'>((resolve) => (timer = setTimeout(() => resolve('queued'), SETTLE_MS))) : undefined;
  try {
    return await Promise.all(
      pushes.map((push) => {
        const reached = push.started.then(
          () => 'spoken' as const,
          (error: Error) => error,
        );
        return push.waiting && late ? Promise.race([reached, late]) : reached;
      }),
    );
  } finally {
    clearTimeout(timer);
  }
}

/** One held push, once the device's queue has room, as the device took it once it reached it; rejects when the device leaves first. */
async function deliverHeld(link: DeviceLink, push: HeldPush): Promise<QueuedPush> {
  for (;;) {
    await link.whenRoom();
    try {
      const queued =
        push.kind === 'say'
          ? link.say(push.turnId, push.text, { interrupt: push.interrupt, reminderId: push.reminderId })
          : link.startTurn(push.turnId, push.text);
      await queued.started;
      return queued;
    } catch (error) {
      // A frame of the device's took the room first: wait again.
      if (!(error instanceof GatewayError && error.code === GatewayErrorCode.DEVICE_BUSY)) throw error;
    }
  }
}

/** A push's id: the `turn_id` its frames carry, and its receipt's. */
function newPushId(): string {
  return `push-${randomUUID()}`;
}

function offline(deviceId: string): GatewayError {
  return new GatewayError(GatewayErrorCode.DEVICE_OFFLINE, `Device "${deviceId}" is not connected`);
}

function notAnswered(deviceId: string): GatewayError {
  return new GatewayError(GatewayErrorCode.TOOL_UNAVAILABLE, `The instance holding device "${deviceId}" did not answer in time`);
}

/** Why a push could not be held, naming what is full. */
function holdRefused(refusal: HoldRefusal, deviceId: string, limits: HoldLimits): GatewayError {
  switch (refusal) {
    case 'device':
      return new GatewayError(GatewayErrorCode.DEVICE_BUSY, `Device "${deviceId}" already has ${limits.perDevice} pushes held for it (FLEET_HOLD_MAX_COUNT)`);
    case 'principal':
      return new GatewayError(
        GatewayErrorCode.RATE_LIMITED,
        `You have ${limits.perPrincipal} pushes held already, the most one token may (FLEET_HOLD_MAX_PER_PRINCIPAL); they are freed as devices connect or holds run out`,
      );
    case 'instance':
      return new GatewayError(GatewayErrorCode.TOOL_UNAVAILABLE, 'This instance holds as many pushes in memory as it may; set REDIS_URL to hold more');
  }
}

/** Whether a push to another instance failed because the device (or its instance) left before it was spoken: then it may be held. */
function leftBeforeDelivery(error: unknown): boolean {
  return error instanceof GatewayError && (error.code === GatewayErrorCode.DEVICE_OFFLINE || error.code === GatewayErrorCode.TOOL_UNAVAILABLE);
}

function asGatewayError(error: unknown): GatewayError {
  return error instanceof GatewayError
    ? error
    : new GatewayError(GatewayErrorCode.TOOL_UNAVAILABLE, (error as Error)?.message ?? 'The device could not be reached');
}

/** A device a push did not reach, as a `say` reports it. */
function failureReport(device: string, error: unknown): SayReport {
  const { code, message } = asGatewayError(error);
  return { device, code, message };
}

/** `error`, telling the caller the id of the push it refused: its receipt says `refused`, and why. */
function refusedPush({ code, message, details }: GatewayError, pushId: string): GatewayError {
  return new GatewayError(code, message, details, { push_id: pushId });
}
