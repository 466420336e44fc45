import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { randomUUID } from 'crypto';
import { Subject } from 'rxjs';
import { setImmediate } from 'timers/promises';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { AccessTokenService } from '../core/auth/access-token.service';
import { GatewayError, GatewayErrorCode } from '../core/errors/gateway-error';
import { DrainService } from '../core/lifecycle/drain.service';
import { PendingReplies } from '../core/requests/pending-replies';
import type { ToolCallContext } from '../core/tools/tool-definition';
import { globExpression } from '../core/auth/tool-pattern';
import { ToolError } from '../core/tools/tool-error';
import type { DeviceEntry } from './device-entry';
import { deviceIdProblem, isDeviceGlob } from './device-id';
import type { DeviceLink, QueuedPush } from './device-link';
import type { DevicePush, FleetCaller, PushOutcome, PushReceipt, ReleasedDevice, SayRequest } from './device-push';
import type { FleetMessage, SayReport, SayReports } from './fleet-bus';
import { FLEET_STORES, FleetStores } from './fleet-stores';
import type { HeldFor, HeldPush, HoldRefusal } from './held-pushes';

/** How long a push waits for the instance holding the device to say it queued it. */
const REMOTE_PUSH_TIMEOUT_MS = 5000;
/** How long a push to a device busy with a turn may take to reach it before its receipt says `queued` rather than `spoken`. */
const SETTLE_MS = 500;
/** How long shutdown waits for held pushes being delivered to stop, before the stores close. */
const DRAIN_STOP_MS = 2000;
/** Globs one fan-out may name. */
const MAX_GLOBS_PER_PUSH = 16;
/** Devices a fan-out speaks to before it lets other work run. */
const PUSHES_PER_TICK = 256;

/** The devices of a fan-out that one instance holds, each with the `turn_id` of its push. */
type SayBatch = { device: string; turnId: string }[];

type Reply = Extract<FleetMessage, { kind: 'reply' }>;

/** What a push asks, without where it goes. */
type Push = Omit<SayRequest, 'origin'>;

/** The device and connection a request to one device went to: another connection taking its place will not answer it. */
type RequestedDevice = Pick<DeviceEntry, 'id' | 'connectionId'>;

/** The pushes held for a device being delivered to one of its connections; `again` when more were held meanwhile. */
interface HeldDrain {
  again: boolean;
  done: Promise<void>;
}

/**
 * The fleet: every device that named itself, wherever its socket is. It keeps this instance's
 * devices in the directory, runs their tools for agents and pushes speech to them, here or
 * through the instance that holds the socket (Redis messages, no sticky routing), and holds
 * pushes for offline devices when asked to.
 *
 * A device id belongs to its owner, the first principal that connected as it, online or not.
 * A device is reached only by its owner, or by a token whose `devices` globs grant it; to anyone
 * else it looks offline. A call or push to another instance ends when that instance answers,
 * when the device leaves the directory (it closed, or its instance died and its liveness key
 * expired), or at the call's own time limit: never a hang. A receipt says only what happened:
 * `spoken` once the push reached the device, `queued` while it waits behind the device's turn,
 * `held` once stored for its next connection.
 */
@Injectable()
export class FleetService implements DevicePush, OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Fleet');
  private readonly links = new Map<string, DeviceLink>();
  private readonly linksByConnection = new Map<string, DeviceLink>();
  /** Requests this instance sent to others, waiting for their replies. */
  private readonly replies = new PendingReplies<Reply, RequestedDevice>();
  /** Calls other instances asked this one to run, by id, so their caller can cancel them. */
  private readonly running = new Map<string, AbortController>();
  /** Held pushes being delivered, by connection. */
  private readonly drains = new Map<string, HeldDrain>();
  private readonly releasedStream = new Subject<ReleasedDevice>();
  /** Device ids their owners gave up: reminders for them are cancelled. */
  readonly released = this.releasedStream.asObservable();

  constructor(
    @Inject(FLEET_STORES) private readonly stores: FleetStores,
    private readonly tokens: AccessTokenService,
    private readonly drain: DrainService,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {}

  get directory() {
    return this.stores.directory;
  }

  get instanceId(): string {
    return this.stores.directory.instanceId;
  }

  /** Devices whose sockets this instance holds. */
  get localCount(): number {
    return this.links.size;
  }

  async onModuleInit(): Promise<void> {
    await this.stores.bus.listen((message) => this.receive(message));
    this.stores.directory.changes.subscribe(({ id, entry }) => this.failAwaited(id, entry?.connectionId));
    await this.stores.directory.start();
  }

  async onApplicationShutdown(): Promise<void> {
    const drains = [...this.drains.values()].map((drain) => drain.done);
    await Promise.race([Promise.allSettled(drains), new Promise((resolve) => setTimeout(resolve, DRAIN_STOP_MS).unref())]);
    await this.stores.directory.stop().catch((error: Error) => this.logger.warn(`Device directory goodbye failed: ${error.message}`));
    this.releasedStream.complete();
    await this.stores.close();
  }

  /**
   * At a device's upgrade: the owner of `deviceId`, made `principal` if the id had none (see
   * {@link DeviceDirectory.admit}). A device this instance holds answers for itself, so its id
   * stays its owner's even while the shared store is being rebuilt.
   */
  async admit(deviceId: string, principal: string): Promise<string> {
    const local = this.links.get(deviceId)?.owner;
    if (local !== undefined && local !== principal) return local;
    return this.stores.directory.admit(deviceId, principal);
  }

  /**
   * A device connected here: it takes its id in the directory, the connection it replaces (here or
   * on another instance) is closed, and the pushes held for it are delivered, in order, as its
   * queue frees.
   */
  async attach(link: DeviceLink): Promise<void> {
    this.links.set(link.deviceId, link);
    this.linksByConnection.set(link.connectionId, link);
    const replaced = await this.stores.directory.claim(this.entryOf(link));
    if (replaced && replaced.connectionId !== link.connectionId) {
      const local = this.linksByConnection.get(replaced.connectionId);
      if (local) local.replaced();
      else if (replaced.instance !== this.instanceId) {
        await this.stores.bus.send(replaced.instance, { kind: 'replace', device: link.deviceId, connectionId: replaced.connectionId });
      }
    }
    this.drainHeld(link);
  }

  /** Its tools changed (`register_tools`): the directory, and so every agent's list, follows. */
  async toolsChanged(link: DeviceLink): Promise<void> {
    if (this.links.get(link.deviceId) !== link) return;
    await this.stores.directory.update(this.entryOf(link));
  }

  /** Its socket closed: it leaves the directory, unless a newer connection of it already took its place. */
  async detach(link: DeviceLink): Promise<void> {
    this.linksByConnection.delete(link.connectionId);
    if (this.links.get(link.deviceId) === link) this.links.delete(link.deviceId);
    await this.stores.directory.release(link.deviceId, link.connectionId);
  }

  deviceOfConnection(connectionId: string): string | undefined {
    return this.linksByConnection.get(connectionId)?.deviceId;
  }

  async mayReach(caller: FleetCaller, deviceId: string): Promise<boolean> {
    const entry = this.stores.directory.lookup(deviceId);
    if (entry && this.reaches(caller, deviceId, entry)) return true;
    return this.reaches(caller, deviceId, { owner: await this.stores.directory.owner(deviceId) });
  }

  async keepOwned(deviceId: string, untilMs: number): Promise<void> {
    const owner = await this.stores.directory.owner(deviceId);
    if (owner !== undefined) await this.stores.directory.keepOwned(deviceId, owner, untilMs);
  }

  /**
   * Whether `caller` reaches `deviceId`, whose owner (and, online, connecting principal) `device`
   * names: internal callers do; a token reaches its own principal's devices, and those its
   * `devices` globs grant.
   */
  reaches(caller: FleetCaller, deviceId: string, device: Pick<DeviceEntry, 'owner' | 'principal'>): boolean {
    if (caller.principal === undefined) return true;
    if (caller.principal === (device.owner ?? device.principal) || caller.principal === device.principal) return true;
    return this.tokens.grantOf(caller.principal).devices?.(deviceId) ?? false;
  }

  /** The online device as `caller` may see it; `undefined` when it is offline or not theirs. */
  visibleDevice(caller: FleetCaller, deviceId: string): DeviceEntry | undefined {
    const entry = this.stores.directory.lookup(deviceId);
    return entry && this.reaches(caller, deviceId, entry) ? entry : undefined;
  }

  /** Every online device `caller` may reach. */
  visibleDevices(caller: FleetCaller): DeviceEntry[] {
    const visible: DeviceEntry[] = [];
    for (const entry of this.stores.directory.all()) if (this.reaches(caller, entry.id, entry)) visible.push(entry);
    return visible;
  }

  /**
   * The owner gives a device id up: what was held for it is dropped, its reminders are cancelled
   * (by whoever listens to {@link released}), and another principal may connect as it. Only an
   * offline device can be released; to anyone but its owner the id looks unknown.
   */
  async release(deviceId: string, caller: FleetCaller): Promise<{ held: number }> {
    checkDeviceId(deviceId);
    const owner = await this.stores.directory.owner(deviceId);
    const notYours = () => new GatewayError(GatewayErrorCode.NOT_FOUND, `No device "${deviceId}" of yours to release`);
    if (owner === undefined || (caller.principal !== undefined && caller.principal !== owner)) throw notYours();
    const outcome = await this.stores.directory.disown(deviceId, owner);
    if (outcome === 'online') {
      throw new GatewayError(GatewayErrorCode.DEVICE_ID_TAKEN, `Device "${deviceId}" is connected: it can be released once it is offline`);
    }
    if (outcome === 'not-owner') throw notYours();
    const held = await this.stores.held.drop(deviceId, owner);
    this.releasedStream.next({ deviceId, owner });
    this.logger.log(`Device id ${deviceId} released by its owner (${held} held pushes dropped)`);
    return { held };
  }

  /** Runs a device's tool for an agent (the catalogue checked the arguments), wherever the device is. */
  callTool(deviceId: string, toolName: string, args: Record<string, unknown>, context: ToolCallContext): Promise<unknown> {
    const entry = this.stores.directory.lookup(deviceId);
    if (!entry) return Promise.reject(offline(deviceId));
    const link = this.links.get(deviceId);
    if (entry.instance === this.instanceId && link) return link.callTool(toolName, args, context.signal);
    const id = randomUUID();
    const timeoutMs = this.config.clientTools.timeoutMs;
    return this.request(
      entry.instance,
      { kind: 'call', id, from: this.instanceId, device: deviceId, tool: toolName, args, timeoutMs, principal: context.principal },
      context.signal,
      entry,
    ).then((reply) => reply.value);
  }

  /** A `say` to one device: a fan-out of one, so that both take one way. */
  async say(deviceId: string, request: SayRequest, caller: FleetCaller): Promise<PushReceipt> {
    checkDeviceId(deviceId);
    const [outcome] = await this.sayToEach([deviceId], request, caller);
    if ('error' in outcome) throw outcome.error;
    return outcome.receipt;
  }

  /**
   * One `say` to many devices, named by id or by glob (`kitchen-*`, matched against the online
   * devices the caller may reach), each answered on its own in the order named. Each instance
   * speaks to the devices it holds: this one at once, another through one message for all of its
   * devices, so a fan-out costs a message per instance, not one per device. A device offline, or
   * gone before its instance spoke, is held when `holdS` asks for it.
   */
  async sayToEach(targets: readonly unknown[], request: SayRequest, caller: FleetCaller): Promise<PushOutcome[]> {
    this.checkRequest(request);
    const devices = this.devicesOf(targets, caller);
    const batches = new Map<string, SayBatch>();
    const unreached: string[] = [];
    for (const device of devices) {
      const entry = this.visibleDevice(caller, device);
      if (!entry) unreached.push(device);
      else {
        const batch = batches.get(entry.instance) ?? [];
        batches.set(entry.instance, batch);
        batch.push({ device, turnId: `push-${randomUUID()}` });
      }
    }
    const outcomes = new Map<string, PushOutcome>();
    await Promise.all(
      [...batches].map(async ([instance, batch]) => {
        const reports =
          instance === this.instanceId ? await this.speakHere(batch, request, caller) : await this.speakElsewhere(instance, batch, request, caller);
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
        this.hold('say', device, `push-${randomUUID()}`, request, caller).then(
          (receipt) => outcomes.set(device, { device, receipt }),
          (error: unknown) => outcomes.set(device, { device, error: asGatewayError(error) }),
        ),
      ),
    );
    return devices.map((device) => outcomes.get(device)!);
  }

  /** Starts a turn on the device as if its user had said `text`; its answer is spoken there. */
  async startTurn(deviceId: string, request: Pick<SayRequest, 'text' | 'holdS'>, caller: FleetCaller): Promise<PushReceipt> {
    checkDeviceId(deviceId);
    this.checkRequest(request);
    const turnId = `push-${randomUUID()}`;
    const entry = this.visibleDevice(caller, deviceId);
    if (entry) {
      try {
        const report =
          entry.instance === this.instanceId
            ? await this.startHere(deviceId, turnId, request, caller)
            : ((
                await this.request(
                  entry.instance,
                  { kind: 'turn', id: turnId, from: this.instanceId, device: deviceId, text: request.text, holdS: request.holdS, principal: caller.principal },
                  AbortSignal.timeout(REMOTE_PUSH_TIMEOUT_MS),
                  entry,
                )
              ).value as SayReport | undefined);
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

  private async hold(kind: HeldPush['kind'], deviceId: string, turnId: string, request: Push, caller: FleetCaller): Promise<PushReceipt> {
    if (!request.holdS) throw offline(deviceId);
    // Only for an id with an owner the caller reaches: a push held for an id nobody owns could be
    // spoken by whichever principal's device takes that id first.
    const owner = await this.stores.directory.owner(deviceId);
    if (owner === undefined || !this.reaches(caller, deviceId, { owner })) throw offline(deviceId);
    const { holdMaxCount, holdMaxPerPrincipal } = this.config.fleet;
    const push: HeldPush = {
      kind,
      turnId,
      text: request.text,
      interrupt: request.interrupt,
      reminderId: request.reminderId,
      expiresAt: Date.now() + request.holdS * 1000,
      by: caller.principal ?? '',
    };
    const refusal = await this.stores.held.hold({ owner, deviceId }, push, { perDevice: holdMaxCount, perPrincipal: holdMaxPerPrincipal });
    if (refusal) throw holdRefused(refusal, deviceId, { perDevice: holdMaxCount, perPrincipal: holdMaxPerPrincipal });
    await this.stores.directory.keepOwned(deviceId, owner, push.expiresAt);
    // It may have connected since it was found offline: its connection delivers it now.
    const entry = this.stores.directory.lookup(deviceId);
    if (entry?.instance === this.instanceId) {
      const link = this.links.get(deviceId);
      if (link) this.drainHeld(link);
    } else if (entry) void this.stores.bus.send(entry.instance, { kind: 'drain', device: deviceId }).catch(() => undefined);
    return { delivered: 'held', turnId };
  }

  /** The devices a fan-out names, in its order, each once: an id as it is, a glob as the online devices it matches that `caller` may reach, by id. */
  private devicesOf(targets: readonly unknown[], caller: FleetCaller): string[] {
    const { pushMaxDevices } = this.config.fleet;
    if (!Array.isArray(targets) || targets.length === 0 || targets.length > pushMaxDevices) {
      throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, `devices must be a list of 1 to ${pushMaxDevices} device ids or globs (FLEET_PUSH_MAX_DEVICES)`);
    }
    const devices = new Set<string>();
    let visible: string[] | undefined;
    let globs = 0;
    for (const target of targets) {
      if (!isDeviceGlob(target)) devices.add(checkDeviceId(target));
      else {
        // Each glob is matched against every device the caller reaches: their number is what is bounded.
        if (++globs > MAX_GLOBS_PER_PUSH) throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, `devices may hold at most ${MAX_GLOBS_PER_PUSH} globs`);
        visible ??= this.visibleDevices(caller)
          .map((entry) => entry.id)
          .sort();
        const matches = globExpression([target]);
        for (const id of visible) if (matches.test(id)) devices.add(id);
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
  private async speakHere(batch: SayBatch, request: Push, caller: FleetCaller): Promise<SayReports> {
    const reports: SayReports = [];
    const queued: { device: string; turnId: string; push: QueuedPush }[] = [];
    for (let index = 0; index < batch.length; index++) {
      const { device, turnId } = batch[index];
      try {
        const link = this.drain.isDraining ? undefined : this.links.get(device);
        if (!link) throw offline(device);
        queued.push({ device, turnId, push: link.say(turnId, request.text, { interrupt: request.interrupt, reminderId: request.reminderId }) });
      } catch (error) {
        reports.push(failureReport(device, error));
      }
      if ((index + 1) % PUSHES_PER_TICK === 0) await setImmediate();
    }
    const settled = await this.settle(queued.map(({ push }) => push));
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
    const link = this.drain.isDraining ? undefined : this.links.get(deviceId);
    if (!link) throw offline(deviceId);
    const push = link.startTurn(turnId, request.text);
    const [outcome] = await this.settle([push]);
    if (outcome === 'spoken') return undefined;
    if (outcome !== 'queued') throw outcome;
    this.holdIfUnheard(push, 'turn', deviceId, turnId, request, caller);
    return { device: deviceId, queued: true };
  }

  /**
   * What became of each push within {@link SETTLE_MS}: `spoken` once it reached the device,
   * `queued` if it still waits behind a turn, or why it never will (its device left first).
   */
  private async settle(pushes: QueuedPush[]): Promise<('spoken' | 'queued' | Error)[]> {
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

  /** A push answered `queued` whose device leaves before its turn: held again when the caller asked for holding, else dropped and said so. */
  private holdIfUnheard(push: QueuedPush, kind: HeldPush['kind'], deviceId: string, turnId: string, request: Push, caller: FleetCaller): void {
    push.started.catch(() =>
      (request.holdS ? this.hold(kind, deviceId, turnId, request, caller) : Promise.reject(offline(deviceId))).catch((error: Error) =>
        this.logger.warn(`A push queued for device ${deviceId} (${turnId}) was not heard, the device left first, and not held again: ${error.message}`),
      ),
    );
  }

  /** Has `instance` speak to the devices of `batch` it holds, in one message; the ones it did not reach at once, with why. */
  private async speakElsewhere(instance: string, batch: SayBatch, request: Push, caller: FleetCaller): Promise<SayReports> {
    const message: FleetMessage = {
      kind: 'say',
      id: randomUUID(),
      from: this.instanceId,
      devices: batch,
      text: request.text,
      interrupt: request.interrupt,
      reminderId: request.reminderId,
      holdS: request.holdS,
      principal: caller.principal,
    };
    try {
      return (await this.request(instance, message, AbortSignal.timeout(REMOTE_PUSH_TIMEOUT_MS))).value as SayReports;
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
    const drain: HeldDrain = { again: false, done: Promise.resolve() };
    this.drains.set(link.connectionId, drain);
    drain.done = (async () => {
      try {
        do {
          drain.again = false;
          for (let push = await this.stores.held.next(to); push && this.links.get(link.deviceId) === link; push = await this.stores.held.next(to)) {
            await this.deliverHeld(link, push);
            await this.stores.held.done(to, push);
          }
        } while (drain.again && this.links.get(link.deviceId) === link);
      } catch (error) {
        this.logger.warn(`Held pushes for device ${link.deviceId} stay held for its next connection: ${(error as Error).message}`);
      } finally {
        this.drains.delete(link.connectionId);
      }
    })();
  }

  /** One held push, once the device's queue has room; rejects when the device leaves first. */
  private async deliverHeld(link: DeviceLink, push: HeldPush): Promise<void> {
    for (;;) {
      await link.whenRoom();
      try {
        const queued =
          push.kind === 'say'
            ? link.say(push.turnId, push.text, { interrupt: push.interrupt, reminderId: push.reminderId })
            : link.startTurn(push.turnId, push.text);
        return await queued.started;
      } catch (error) {
        // A frame of the device's took the room first: wait again.
        if (!(error instanceof GatewayError && error.code === GatewayErrorCode.DEVICE_BUSY)) throw error;
      }
    }
  }

  /**
   * Sends `message` to `instance` and waits for its reply, until `signal` ends the wait (a call is
   * then withdrawn there), or, for a request to one device's connection (`device`), that device's
   * departure.
   */
  private async request(instance: string, message: Extract<FleetMessage, { id: string }>, signal: AbortSignal, device?: RequestedDevice): Promise<Reply> {
    const reply = await this.replies.request(
      (id) =>
        void this.stores.bus.send(instance, message).then(
          (heard) => heard || this.replies.fail(id, replyError(gone(id, device?.id))),
          (error: Error) =>
            this.replies.fail(id, new GatewayError(GatewayErrorCode.TOOL_UNAVAILABLE, `The device's instance cannot be reached: ${error.message}`)),
        ),
      {
        id: message.id,
        tag: device,
        signal,
        withdraw:
          message.kind === 'call'
            ? (id) => void this.stores.bus.send(instance, { kind: 'cancel', id, device: message.device }).catch(() => undefined)
            : undefined,
      },
    );
    if (!reply.ok) throw replyError(reply);
    return reply;
  }

  /** Ends the requests waiting on a device that left the directory, or whose connection another replaced: nobody will answer them. */
  private failAwaited(deviceId: string, connectionId: string | undefined): void {
    this.replies.failWhere(
      (device) => device?.id === deviceId && device.connectionId !== connectionId,
      (id) => replyError(gone(id, deviceId)),
    );
  }

  /** A message from another instance. */
  private receive(message: FleetMessage): void {
    switch (message.kind) {
      case 'reply':
        this.replies.settle(message.id, message);
        return;
      case 'replace':
        this.linksByConnection.get(message.connectionId)?.replaced();
        return;
      case 'drain': {
        const link = this.links.get(message.device);
        if (link) this.drainHeld(link);
        return;
      }
      case 'cancel':
        this.running.get(message.id)?.abort(new Error('The caller cancelled'));
        return;
      case 'call':
        void this.runForRemote(message);
        return;
      case 'say':
        void this.speakHere(message.devices, message, { principal: message.principal }).then((reports) =>
          this.answer(message.from, { kind: 'reply', id: message.id, ok: true, value: reports }),
        );
        return;
      case 'turn':
        void this.startHere(message.device, message.id, message, { principal: message.principal }).then(
          (report) => this.answer(message.from, { kind: 'reply', id: message.id, ok: true, value: report }),
          (error: unknown) => this.answer(message.from, failureReply(message.id, error)),
        );
        return;
    }
  }

  private async runForRemote(message: Extract<FleetMessage, { kind: 'call' }>): Promise<void> {
    const link = this.links.get(message.device);
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new Error('Timed out')), message.timeoutMs);
    this.running.set(message.id, controller);
    let reply: Reply;
    try {
      if (!link) throw offline(message.device);
      const value = await link.callTool(message.tool, message.args, controller.signal);
      reply = { kind: 'reply', id: message.id, ok: true, value };
    } catch (error) {
      reply = failureReply(message.id, error);
    } finally {
      clearTimeout(timer);
      this.running.delete(message.id);
    }
    if (!controller.signal.aborted || reply.ok) await this.answer(message.from, reply);
  }

  /** Replies to another instance; one that is gone is past caring. */
  private answer(instance: string, reply: Reply): Promise<unknown> {
    return this.stores.bus.send(instance, reply).catch(() => undefined);
  }

  private entryOf(link: DeviceLink): DeviceEntry {
    return {
      id: link.deviceId,
      principal: link.principal,
      owner: link.owner,
      instance: this.instanceId,
      connectionId: link.connectionId,
      since: link.since,
      tools: link.agentTools(),
    };
  }
}

function offline(deviceId: string): GatewayError {
  return new GatewayError(GatewayErrorCode.DEVICE_OFFLINE, `Device "${deviceId}" is not connected`);
}

function gone(id: string, deviceId: string | undefined): Reply {
  return {
    kind: 'reply',
    id,
    ok: false,
    code: 'TOOL_UNAVAILABLE',
    message: deviceId ? `Device "${deviceId}" went away before it answered` : 'The instance holding the devices went away',
  };
}

/** Why a push could not be held, naming what is full. */
function holdRefused(refusal: HoldRefusal, deviceId: string, limits: { perDevice: number; perPrincipal: number }): GatewayError {
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

/** A device a push did not reach, as a `say` reports it. */
function failureReport(device: string, error: unknown): SayReport {
  const { code, message } = asGatewayError(error);
  return { device, code, message };
}

function notAnswered(deviceId: string): GatewayError {
  return new GatewayError(GatewayErrorCode.TOOL_UNAVAILABLE, `The instance holding device "${deviceId}" did not answer in time`);
}

/** Whether a push to another instance failed because the device (or its instance) left before it was spoken: then it may be held. */
function leftBeforeDelivery(error: unknown): boolean {
  return error instanceof GatewayError && (error.code === GatewayErrorCode.DEVICE_OFFLINE || error.code === GatewayErrorCode.TOOL_UNAVAILABLE);
}

function checkDeviceId(id: unknown): string {
  const problem = deviceIdProblem(id);
  if (problem) throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, `${JSON.stringify(String(id).slice(0, 80))}: ${problem}`);
  return id as string;
}

function asGatewayError(error: unknown): GatewayError {
  return error instanceof GatewayError
    ? error
    : new GatewayError(GatewayErrorCode.TOOL_UNAVAILABLE, (error as Error)?.message ?? 'The device could not be reached');
}

/** A failure as it travels back to the caller's instance: a gateway code and a message safe to show. */
function failureReply(id: string, error: unknown): Reply {
  if (error instanceof GatewayError) return { kind: 'reply', id, ok: false, code: error.code, message: error.message };
  if (error instanceof ToolError) return { kind: 'reply', id, ok: false, code: 'TOOL_EXECUTION_FAILED', message: error.message };
  return { kind: 'reply', id, ok: false, code: 'TOOL_UNAVAILABLE', message: (error as Error)?.message ?? 'The device did not answer' };
}

/** A failed reply as the error the caller's side throws: a tool failure for calls, a gateway error for pushes. */
function replyError(reply: Reply): Error {
  if (reply.code === 'TOOL_EXECUTION_FAILED') return new ToolError(reply.message ?? 'The device could not run the tool');
  return new GatewayError((reply.code ?? 'TOOL_UNAVAILABLE') as GatewayErrorCode, reply.message ?? 'The device did not answer');
}
