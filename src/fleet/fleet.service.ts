import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { randomUUID } from 'crypto';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { AccessTokenService } from '../core/auth/access-token.service';
import { GatewayError, GatewayErrorCode } from '../core/errors/gateway-error';
import type { ToolCallContext } from '../core/tools/tool-definition';
import { ToolError } from '../core/tools/tool-error';
import type { DeviceEntry } from './device-entry';
import { deviceIdProblem } from './device-id';
import type { DeviceLink } from './device-link';
import type { DevicePush, FleetCaller, PushReceipt, SayRequest } from './device-push';
import type { FleetMessage } from './fleet-bus';
import { FLEET_STORES, FleetStores } from './fleet-stores';
import type { HeldPush } from './held-pushes';

/** How long a push waits for the instance holding the device to say it queued it. */
const REMOTE_PUSH_TIMEOUT_MS = 5000;

type Reply = Extract<FleetMessage, { kind: 'reply' }>;

/** A request sent to another instance, waiting for its reply. */
interface Awaited {
  device: string;
  /** The device's connection the request went to: another one taking its place will not answer it. */
  connectionId: string;
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
    return this.request(entry, { kind: 'call', id, from: this.instanceId, device: deviceId, tool: toolName, args, timeoutMs, principal: context.principal }, context.signal).then(
      (reply) => reply.value,
    );
  }

  say(deviceId: string, request: SayRequest, caller: FleetCaller): Promise<PushReceipt> {
    return this.push('say', deviceId, request, caller);
  }

  /** Starts a turn on the device as if its user had said `text`; its answer is spoken there. */
  startTurn(deviceId: string, request: Pick<SayRequest, 'text' | 'holdS'>, caller: FleetCaller): Promise<PushReceipt> {
    return this.push('turn', deviceId, request, caller);
  }

  private async push(kind: 'say' | 'turn', deviceId: string, request: Omit<SayRequest, 'origin'>, caller: FleetCaller): Promise<PushReceipt> {
    this.checkPush(deviceId, request);
    const turnId = `push-${randomUUID()}`;
    const entry = this.visibleDevice(caller, deviceId);
    if (entry) {
      const link = this.links.get(deviceId);
      if (entry.instance === this.instanceId && link) {
        this.pushTo(link, kind, turnId, request);
        return { delivered: 'spoken', turnId };
      }
      const message: FleetMessage =
        kind === 'say'
          ? { kind, id: turnId, from: this.instanceId, device: deviceId, text: request.text, interrupt: request.interrupt, reminderId: request.reminderId }
          : { kind, id: turnId, from: this.instanceId, device: deviceId, text: request.text };
      try {
        await this.request(entry, message, AbortSignal.timeout(REMOTE_PUSH_TIMEOUT_MS));
        return { delivered: 'spoken', turnId };
      } catch (error) {
        // It left between the lookup and the delivery: held, if the caller asked for that.
        const left = error instanceof GatewayError && (error.code === GatewayErrorCode.DEVICE_OFFLINE || error.code === GatewayErrorCode.TOOL_UNAVAILABLE);
        if (!left) throw error instanceof GatewayError ? error : new GatewayError(GatewayErrorCode.TOOL_UNAVAILABLE, `The instance holding device "${deviceId}" did not answer in time`);
      }
    }
    return this.hold(kind, deviceId, turnId, request, caller);
  }

  private async hold(kind: 'say' | 'turn', deviceId: string, turnId: string, request: Omit<SayRequest, 'origin'>, caller: FleetCaller): Promise<PushReceipt> {
    if (!request.holdS) throw offline(deviceId);
    // Only for a device the caller's principal connected before (or is granted): a push held for an
    // id nobody has seen could be spoken by whichever principal's device takes that id first.
    if (!(await this.mayReach(caller, deviceId))) throw offline(deviceId);
    const { holdMaxCount } = this.config.fleet;
    const push: HeldPush = { kind, turnId, text: request.text, interrupt: request.interrupt, reminderId: request.reminderId, expiresAt: Date.now() + request.holdS * 1000 };
    if (!(await this.stores.held.hold(deviceId, push, holdMaxCount))) {
      throw new GatewayError(GatewayErrorCode.DEVICE_BUSY, `Device "${deviceId}" already has ${holdMaxCount} pushes held for it (FLEET_HOLD_MAX_COUNT)`);
    }
    return { delivered: 'held', turnId };
  }

  private checkPush(deviceId: string, request: Omit<SayRequest, 'origin'>): void {
    const idProblem = deviceIdProblem(deviceId);
    if (idProblem) throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, idProblem);
    const { pushMaxChars, holdMaxS } = this.config.fleet;
    if (typeof request.text !== 'string' || request.text.trim() === '') throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, 'text must be a non-empty string');
    if (request.text.length > pushMaxChars) {
      throw new GatewayError(GatewayErrorCode.PAYLOAD_TOO_LARGE, `text is ${request.text.length} characters, over the ${pushMaxChars} a push may carry (FLEET_PUSH_MAX_CHARS)`);
    }
    const { holdS } = request;
    if (holdS !== undefined && (typeof holdS !== 'number' || !Number.isFinite(holdS) || holdS < 0 || holdS > holdMaxS)) {
      throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, `hold_s must be a number of seconds from 0 to ${holdMaxS} (FLEET_HOLD_MAX_S)`);
    }
  }

  private pushTo(link: DeviceLink, kind: 'say' | 'turn', turnId: string, request: Omit<SayRequest, 'origin'>): void {
    if (kind === 'say') link.say(turnId, request.text, { interrupt: request.interrupt, reminderId: request.reminderId });
    else link.startTurn(turnId, request.text);
  }

  private deliverHeld(link: DeviceLink, push: HeldPush): void {
    try {
      this.pushTo(link, push.kind, push.turnId, push);
    } catch (error) {
      this.logger.warn(`A push held for device ${link.deviceId} was dropped: ${(error as Error).message}`);
    }
  }

  /** Sends `message` to the instance holding `entry`'s socket and waits for its reply, until `signal` or the device's departure ends the wait. */
  private request(entry: DeviceEntry, message: Extract<FleetMessage, { id: string }>, signal: AbortSignal): Promise<Reply> {
    return new Promise<Reply>((resolve, reject) => {
      const forget = () => {
        this.awaited.delete(message.id);
        signal.removeEventListener('abort', onAbort);
      };
      const onAbort = () => {
        forget();
        if (message.kind === 'call') void this.stores.bus.send(entry.instance, { kind: 'cancel', id: message.id, device: entry.id }).catch(() => undefined);
        reject(signal.reason);
      };
      if (signal.aborted) return reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      this.awaited.set(message.id, {
        device: entry.id,
        connectionId: entry.connectionId,
        settle: (reply) => {
          forget();
          if (reply.ok) resolve(reply);
          else reject(replyError(reply));
        },
      });
      this.stores.bus.send(entry.instance, message).then(
        (heard) => heard || this.awaited.get(message.id)?.settle(gone(message.id, entry.id)),
        (error: Error) => this.awaited.get(message.id)?.settle({ kind: 'reply', id: message.id, ok: false, code: 'TOOL_UNAVAILABLE', message: `The device's instance cannot be reached: ${error.message}` }),
      );
    });
  }

  /** Ends the requests waiting on a device that left the directory, or whose connection another replaced: nobody will answer them. */
  private failAwaited(deviceId: string, connectionId: string | undefined): void {
    for (const [id, waiting] of this.awaited) {
      if (waiting.device === deviceId && waiting.connectionId !== connectionId) waiting.settle(gone(id, deviceId));
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
      case 'turn': {
        const link = this.links.get(message.device);
        let reply: Reply = { kind: 'reply', id: message.id, ok: true };
        try {
          if (!link) throw offline(message.device);
          this.pushTo(link, message.kind, message.id, message);
        } catch (error) {
          reply = failureReply(message.id, error);
        }
        void this.stores.bus.send(message.from, reply).catch(() => undefined);
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
    if (!controller.signal.aborted || reply.ok) await this.stores.bus.send(message.from, reply).catch(() => undefined);
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

function gone(id: string, deviceId: string): Reply {
  return { kind: 'reply', id, ok: false, code: 'TOOL_UNAVAILABLE', message: `Device "${deviceId}" went away before it answered` };
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
