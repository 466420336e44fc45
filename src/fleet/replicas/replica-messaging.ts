import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { randomUUID } from 'crypto';
import { GatewayError, GatewayErrorCode } from '../../core/errors/gateway-error';
import { PendingReplies } from '../../core/requests/pending-replies';
import { ToolError } from '../../core/tools/tool-error';
import type { DeviceEntry } from '../device-entry';
import { FLEET_STORES, FleetStores } from '../fleet-stores';
import type { ReplicaMessage } from './replica-bus';

/** The device connection a request is about: it fails at once when that connection leaves the directory (nobody will answer). */
export type AboutDevice = Pick<DeviceEntry, 'id' | 'connectionId'>;

/** Runs a request another instance sent; what it returns (or throws) is the reply. `signal` aborts when the requester withdraws it. */
export type RequestHandler<Body = unknown> = (body: Body, request: { signal: AbortSignal; from: string }) => unknown;

/** Hears a notice another instance sent. */
export type NoticeHandler<Body = unknown> = (body: Body) => void;

type Reply = Extract<ReplicaMessage, { kind: 'reply' }>;

/**
 * Requests and notices between the instances of a fleet, whatever they are about: each kind of
 * message has its handler ({@link handle}, {@link on}), so the fleet's parts (pushes, device
 * tools, connections) each speak for themselves. A request waits for its reply in one
 * {@link PendingReplies}: it ends when the other instance answers, when it cannot be reached,
 * when its caller's signal aborts (the other instance is told, and stops), or when the device
 * connection it is about leaves the directory; never a hang. Failures travel as a gateway code and
 * a message safe to show.
 */
@Injectable()
export class ReplicaMessaging implements OnModuleInit {
  private readonly logger = new Logger('Fleet');
  private readonly replies = new PendingReplies<Reply, AboutDevice>();
  /** Requests other instances asked this one to run, by id, so their caller can withdraw them. */
  private readonly running = new Map<string, AbortController>();
  private readonly handlers = new Map<string, RequestHandler>();
  private readonly noticeHandlers = new Map<string, NoticeHandler>();

  constructor(@Inject(FLEET_STORES) private readonly stores: FleetStores) {}

  get instanceId(): string {
    return this.stores.directory.instanceId;
  }

  async onModuleInit(): Promise<void> {
    this.stores.directory.changes.subscribe(({ id, entry }) => this.failRequestsAbout(id, entry?.connectionId));
    await this.stores.bus.listen((message) => this.receive(message));
  }

  /** Who runs the requests of `type` that other instances send here. */
  handle<Body>(type: string, handler: RequestHandler<Body>): void {
    this.handlers.set(type, handler as RequestHandler);
  }

  /** Who hears the notices of `type`. */
  on<Body>(type: string, handler: NoticeHandler<Body>): void {
    this.noticeHandlers.set(type, handler as NoticeHandler);
  }

  /**
   * Sends a request of `type` to `instance` and resolves with what its handler returned; rejects
   * with its failure (a `ToolError` for a tool's own, a `GatewayError` otherwise), or
   * `TOOL_UNAVAILABLE` when the instance cannot be reached or the device connection `about` names
   * leaves first, or with the signal's reason.
   */
  async request<T>(instance: string, type: string, body: unknown, options: { signal: AbortSignal; about?: AboutDevice }): Promise<T> {
    const reply = await this.replies.request(
      (id) =>
        void this.stores.bus.send(instance, { kind: 'request', type, id, from: this.instanceId, body }).then(
          (heard) => heard || this.replies.fail(id, goneError(options.about?.id)),
          (error: Error) =>
            this.replies.fail(id, new GatewayError(GatewayErrorCode.TOOL_UNAVAILABLE, `The device's instance cannot be reached: ${error.message}`)),
        ),
      {
        id: randomUUID(),
        tag: options.about,
        signal: options.signal,
        withdraw: (id) => void this.stores.bus.send(instance, { kind: 'withdraw', id }).catch(() => undefined),
      },
    );
    if (!reply.ok) throw replyError(reply);
    return reply.value as T;
  }

  /** Sends a notice of `type` to `instance`; whether anyone listened there. */
  notify(instance: string, type: string, body: unknown): Promise<boolean> {
    return this.stores.bus.send(instance, { kind: 'notice', type, body }).catch(() => false);
  }

  /** Sends a notice of `type` to every instance, this one included (its handler runs here at once). */
  async broadcast(type: string, body: unknown): Promise<void> {
    this.noticeHandlers.get(type)?.(body);
    await this.stores.bus.broadcast({ kind: 'notice', type, body, from: this.instanceId });
  }

  /** Ends the requests about a device that left the directory, or whose connection another replaced. */
  private failRequestsAbout(deviceId: string, connectionId: string | undefined): void {
    this.replies.failWhere(
      (about) => about?.id === deviceId && about.connectionId !== connectionId,
      () => goneError(deviceId),
    );
  }

  private receive(message: ReplicaMessage): void {
    switch (message.kind) {
      case 'reply':
        this.replies.settle(message.id, message);
        return;
      case 'withdraw':
        this.running.get(message.id)?.abort(new GatewayError(GatewayErrorCode.TOOL_UNAVAILABLE, 'The caller withdrew the request'));
        return;
      case 'notice': {
        if (message.from === this.instanceId) return;
        const handler = this.noticeHandlers.get(message.type);
        if (handler) handler(message.body);
        else this.logger.warn(`A notice of unknown type "${message.type}" from another instance was dropped`);
        return;
      }
      case 'request':
        void this.run(message);
        return;
    }
  }

  private async run(message: Extract<ReplicaMessage, { kind: 'request' }>): Promise<void> {
    const controller = new AbortController();
    this.running.set(message.id, controller);
    let reply: Reply;
    try {
      const handler = this.handlers.get(message.type);
      if (!handler) throw new GatewayError(GatewayErrorCode.TOOL_UNAVAILABLE, `This instance cannot answer "${message.type}" requests (another version?)`);
      reply = { kind: 'reply', id: message.id, ok: true, value: await handler(message.body, { signal: controller.signal, from: message.from }) };
    } catch (error) {
      reply = failureReply(message.id, error);
    } finally {
      this.running.delete(message.id);
    }
    // A withdrawn request's caller stopped listening.
    if (!controller.signal.aborted) await this.stores.bus.send(message.from, reply).catch(() => undefined);
  }
}

function goneError(deviceId: string | undefined): GatewayError {
  return new GatewayError(
    GatewayErrorCode.TOOL_UNAVAILABLE,
    deviceId ? `Device "${deviceId}" went away before it answered` : 'The instance holding the devices went away',
  );
}

/** A failure as it travels back to the requester: a gateway code and a message safe to show. */
function failureReply(id: string, error: unknown): Reply {
  if (error instanceof GatewayError) return { kind: 'reply', id, ok: false, code: error.code, message: error.message };
  if (error instanceof ToolError) return { kind: 'reply', id, ok: false, code: 'TOOL_EXECUTION_FAILED', message: error.message };
  return { kind: 'reply', id, ok: false, code: 'TOOL_UNAVAILABLE', message: (error as Error)?.message ?? 'The other instance could not answer' };
}

/** A failed reply as the requester's error: a tool's own failure as a `ToolError`, anything else as a `GatewayError`. */
function replyError(reply: Reply): Error {
  if (reply.code === 'TOOL_EXECUTION_FAILED') return new ToolError(reply.message ?? 'The device could not run the tool');
  return new GatewayError((reply.code ?? 'TOOL_UNAVAILABLE') as GatewayErrorCode, reply.message ?? 'The other instance did not answer');
}
