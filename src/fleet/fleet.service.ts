import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { randomUUID } from 'crypto';
import { setImmediate } from 'timers/promises';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { AccessTokenService } from '../core/auth/access-token.service';
import { GatewayError, GatewayErrorCode } from '../core/errors/gateway-error';
import type { ToolCallContext } from '../core/tools/tool-definition';
import { globExpression } from '../core/auth/tool-pattern';
import { ToolError } from '../core/tools/tool-error';
import type { DeviceEntry } from './device-entry';
import { deviceIdProblem, isDeviceGlob } from './device-id';
import type { DeviceLink } from './device-link';
import type { DevicePush, FleetCaller, PushOutcome, PushReceipt, SayRequest } from './device-push';
import type { FleetMessage, SayFailures } from './fleet-bus';
import { FLEET_STORES, FleetStores } from './fleet-stores';
import type { HeldPush } from './held-pushes';

/** How long a push waits for the instance holding the device to say it queued it. */
const REMOTE_PUSH_TIMEOUT_MS = 5000;
/** Globs one fan-out may name. */
const MAX_GLOBS_PER_PUSH = 16;
/** Devices a fan-out speaks to before it lets other work run. */
const PUSHES_PER_TICK = 256;

/** The devices of a fan-out that one instance holds, each with the `turn_id` of its push. */
type SayBatch = { device: string; turnId: string }[];

type Reply = Extract<FleetMessage, { kind: 'reply' }>;

/** A request sent to another instance, waiting for its reply. */
interface Awaited {
  /** The device and connection a request to one device went to: another connection taking its place will not answer it. */
  device?: Pick<DeviceEntry, 'id' | 'connectionId'>;
  settle(reply: Reply): void;
}

/**
 * The fleet: every device that named itself, wherever its socket is. It keeps this instance's
 * devices in the directory, runs their tools for agents and pushes speech to them, here or
 * through the instance that holds the socket (Redis messages, no sticky routing), and holds
 * pushes for offline devices when asked to.
 *
 * A device is reached only by its own principal, or by a token whose `devices` globs grant it;
 * to anyone else it looks offline. A call or push to another instance ends when that instance
 * answers, when the device leaves the directory (it closed, or its instance died and its
 * liveness key expired), or at the call's own time limit: never a hang.
 */
@Injectable()
export class FleetService implements DevicePush, OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Fleet');
  private readonly links = new Map<string, DeviceLink>();
  private readonly linksByConnection = new Map<string, DeviceLink>();
  /** Requests this instance sent to others, by id. */
  private readonly awaited = new Map<string, Awaited>();
  /** Calls other instances asked this one to run, by id, so their caller can cancel them. */
  private readonly running = new Map<string, AbortController>();

  constructor(
    @Inject(FLEET_STORES) private readonly stores: FleetStores,
    private readonly tokens: AccessTokenService,
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
    await this.stores.directory.stop().catch((error: Error) => this.logger.warn(`Device directory goodbye failed: ${error.message}`));
    await this.stores.close();
  }

  /**
   * A device connected here: it takes its id in the directory, the connection it replaces (here or
   * on another instance) is closed, and the pushes held for it are delivered in order.
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
    for (const push of await this.stores.held.take(link.deviceId)) this.deliverHeld(link, push);
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
    const owner = this.stores.directory.lookup(deviceId)?.principal ?? (await this.stores.directory.lastOwner(deviceId));
    return this.reaches(caller, deviceId, owner);
  }

  /**
   * Whether `caller` reaches `deviceId` whose owner is `ownerPrincipal`: internal callers do; a
   * token reaches its own principal's devices, and those its `devices` globs grant.
   */
  reaches(caller: FleetCaller, deviceId: string, ownerPrincipal: string | undefined): boolean {
    if (caller.principal === undefined) return true;
    if (ownerPrincipal !== undefined && ownerPrincipal === caller.principal) return true;
    return this.tokens.grantOf(caller.principal).devices?.(deviceId) ?? false;
  }

  /** The online device as `caller` may see it; `undefined` when it is offline or not theirs. */
  visibleDevice(caller: FleetCaller, deviceId: string): DeviceEntry | undefined {
    const entry = this.stores.directory.lookup(deviceId);
    return entry && this.reaches(caller, deviceId, entry.principal) ? entry : undefined;
  }

  /** Every online device `caller` may reach. */
  visibleDevices(caller: FleetCaller): DeviceEntry[] {
    const visible: DeviceEntry[] = [];
    for (const entry of this.stores.directory.all()) if (this.reaches(caller, entry.id, entry.principal)) visible.push(entry);
    return visible;
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
        const failures = instance === this.instanceId ? await this.speakHere(batch, request) : await this.speakElsewhere(instance, batch, request);
        const failed = new Map(failures.map((failure) => [failure.device, failure]));
        for (const { device, turnId } of batch) {
          const failure = failed.get(device);
          if (!failure) outcomes.set(device, { device, receipt: { delivered: 'spoken', turnId } });
          else if (failure.code === GatewayErrorCode.DEVICE_OFFLINE) unreached.push(device);
          else outcomes.set(device, { device, error: new GatewayError(failure.code as GatewayErrorCode, failure.message) });
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
      const link = this.links.get(deviceId);
      if (entry.instance === this.instanceId && link) {
        link.startTurn(turnId, request.text);
        return { delivered: 'spoken', turnId };
      }
      try {
        await this.request(
          entry.instance,
          { kind: 'turn', id: turnId, from: this.instanceId, device: deviceId, text: request.text },
          AbortSignal.timeout(REMOTE_PUSH_TIMEOUT_MS),
          entry,
        );
        return { delivered: 'spoken', turnId };
      } catch (error) {
        // It left between the lookup and the delivery: held, if the caller asked for that.
        if (!leftBeforeDelivery(error)) throw error instanceof GatewayError ? error : notAnswered(deviceId);
      }
    }
    return this.hold('turn', deviceId, turnId, request, caller);
  }

  private async hold(kind: 'say' | 'turn', deviceId: string, turnId: string, request: Omit<SayRequest, 'origin'>, caller: FleetCaller): Promise<PushReceipt> {
    if (!request.holdS) throw offline(deviceId);
    // Only for a device the caller's principal connected before (or is granted): a push held for an
    // id nobody has seen could be spoken by whichever principal's device takes that id first.
    if (!(await this.mayReach(caller, deviceId))) throw offline(deviceId);
    const { holdMaxCount } = this.config.fleet;
    const push: HeldPush = {
      kind,
      turnId,
      text: request.text,
      interrupt: request.interrupt,
      reminderId: request.reminderId,
      expiresAt: Date.now() + request.holdS * 1000,
    };
    if (!(await this.stores.held.hold(deviceId, push, holdMaxCount))) {
      throw new GatewayError(GatewayErrorCode.DEVICE_BUSY, `Device "${deviceId}" already has ${holdMaxCount} pushes held for it (FLEET_HOLD_MAX_COUNT)`);
    }
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

  private checkRequest(request: Omit<SayRequest, 'origin'>): void {
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
   * Speaks to the devices of `batch` this instance holds; the ones it could not reach, with why.
   * It lets other work run every {@link PUSHES_PER_TICK} devices, so a fan-out to thousands does
   * not hold up the sockets it is not writing to.
   */
  private async speakHere(batch: SayBatch, request: Omit<SayRequest, 'origin'>): Promise<SayFailures> {
    const failures: SayFailures = [];
    for (let index = 0; index < batch.length; index++) {
      const { device, turnId } = batch[index];
      try {
        const link = this.links.get(device);
        if (!link) throw offline(device);
        link.say(turnId, request.text, { interrupt: request.interrupt, reminderId: request.reminderId });
      } catch (error) {
        const { code, message } = asGatewayError(error);
        failures.push({ device, code, message });
      }
      if ((index + 1) % PUSHES_PER_TICK === 0) await setImmediate();
    }
    return failures;
  }

  /** Has `instance` speak to the devices of `batch` it holds, in one message; the ones it could not reach, with why. */
  private async speakElsewhere(instance: string, batch: SayBatch, request: Omit<SayRequest, 'origin'>): Promise<SayFailures> {
    const message: FleetMessage = {
      kind: 'say',
      id: randomUUID(),
      from: this.instanceId,
      devices: batch,
      text: request.text,
      interrupt: request.interrupt,
      reminderId: request.reminderId,
    };
    try {
      return (await this.request(instance, message, AbortSignal.timeout(REMOTE_PUSH_TIMEOUT_MS))).value as SayFailures;
    } catch (error) {
      return batch.map(({ device }) =>
        leftBeforeDelivery(error)
          ? { device, code: GatewayErrorCode.DEVICE_OFFLINE, message: offline(device).message }
          : { device, code: GatewayErrorCode.TOOL_UNAVAILABLE, message: notAnswered(device).message },
      );
    }
  }

  private deliverHeld(link: DeviceLink, push: HeldPush): void {
    try {
      if (push.kind === 'say') link.say(push.turnId, push.text, { interrupt: push.interrupt, reminderId: push.reminderId });
      else link.startTurn(push.turnId, push.text);
    } catch (error) {
      this.logger.warn(`A push held for device ${link.deviceId} was dropped: ${(error as Error).message}`);
    }
  }

  /**
   * Sends `message` to `instance` and waits for its reply, until `signal` ends the wait, or, for a
   * request to one device's connection (`device`), that device's departure.
   */
  private request(
    instance: string,
    message: Extract<FleetMessage, { id: string }>,
    signal: AbortSignal,
    device?: Pick<DeviceEntry, 'id' | 'connectionId'>,
  ): Promise<Reply> {
    return new Promise<Reply>((resolve, reject) => {
      const forget = () => {
        this.awaited.delete(message.id);
        signal.removeEventListener('abort', onAbort);
      };
      const onAbort = () => {
        forget();
        if (message.kind === 'call') void this.stores.bus.send(instance, { kind: 'cancel', id: message.id, device: message.device }).catch(() => undefined);
        reject(signal.reason);
      };
      if (signal.aborted) return reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      this.awaited.set(message.id, {
        device,
        settle: (reply) => {
          forget();
          if (reply.ok) resolve(reply);
          else reject(replyError(reply));
        },
      });
      this.stores.bus.send(instance, message).then(
        (heard) => heard || this.awaited.get(message.id)?.settle(gone(message.id, device?.id)),
        (error: Error) =>
          this.awaited.get(message.id)?.settle({
            kind: 'reply',
            id: message.id,
            ok: false,
            code: 'TOOL_UNAVAILABLE',
            message: `The device's instance cannot be reached: ${error.message}`,
          }),
      );
    });
  }

  /** Ends the requests waiting on a device that left the directory, or whose connection another replaced: nobody will answer them. */
  private failAwaited(deviceId: string, connectionId: string | undefined): void {
    for (const [id, waiting] of this.awaited) {
      if (waiting.device?.id === deviceId && waiting.device.connectionId !== connectionId) waiting.settle(gone(id, deviceId));
    }
  }

  /** A message from another instance. */
  private receive(message: FleetMessage): void {
    switch (message.kind) {
      case 'reply':
        this.awaited.get(message.id)?.settle(message);
        return;
      case 'replace':
        this.linksByConnection.get(message.connectionId)?.replaced();
        return;
      case 'cancel':
        this.running.get(message.id)?.abort(new Error('The caller cancelled'));
        return;
      case 'call':
        void this.runForRemote(message);
        return;
      case 'say':
        void this.speakHere(message.devices, message).then((failures) =>
          this.answer(message.from, { kind: 'reply', id: message.id, ok: true, value: failures }),
        );
        return;
      case 'turn': {
        const link = this.links.get(message.device);
        let reply: Reply = { kind: 'reply', id: message.id, ok: true };
        try {
          if (!link) throw offline(message.device);
          link.startTurn(message.id, message.text);
        } catch (error) {
          reply = failureReply(message.id, error);
        }
        void this.answer(message.from, reply);
        return;
      }
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
