import { Injectable, Logger } from '@nestjs/common';
import { languageOfText } from '../assistant/speech/spoken-forms';
import { cleanForSpeech } from '../assistant/speech/clean-for-speech';
import { GatewayError, GatewayErrorCode } from '../core/errors/gateway-error';
import type { ArgumentsValidator } from '../core/tools/json-schema';
import { QueueFullError } from '../core/ws/serial-queue';
import { CLOSE_INTERNAL_ERROR } from '../core/ws/upgrade-router';
import type { DeviceTool } from '../fleet/device-entry';
import { deviceIdOf, deviceOwnerOf } from '../fleet/device-identity.guard';
import { PUSH_CUT, type DeviceLink, type PushEnd, type QueuedPush } from '../fleet/device-link';
import { LocalDevices } from '../fleet/local-devices';
import { ClientToolsService } from './client-tools.service';
import type { LlmConnection } from './llm-connection';
import { llmResponseFrame, statusFrame } from './llm-gateway.frames';
import type { LlmServerFrame } from './protocol';
import { cleanedTurn } from './speech-cleaning.interceptor';
import { TurnStarter } from './turn-starter';
import { LLM_PROTOCOL } from './llm-protocol-name';

/** Why a device's older connection is closed when a newer one of the same id arrives. */
export const CLOSE_REPLACED = { code: 4409, reason: 'Replaced: this device connected again' } as const;

/** A push the device's queue has no room for: the device is busy, not the caller wrong. */
export function busy(deviceId: string, error: unknown): unknown {
  return error instanceof QueueFullError
    ? new GatewayError(GatewayErrorCode.DEVICE_BUSY, `Device "${deviceId}" has too many requests waiting (at most ${error.limit})`)
    : error;
}

/** A push that never reached the device: its connection closed, or was closing, before its turn came. */
export function unheard(deviceId: string): GatewayError {
  return new GatewayError(GatewayErrorCode.DEVICE_OFFLINE, `Device "${deviceId}" disconnected before the push reached it`);
}

/**
 * A connection that named a device, as the fleet drives it: what every protocol's device does
 * alike (its tools for agents, run through the connection's device tools, its queue, its
 * replacement). Each protocol says how a pushed sentence and a pushed turn reach its device.
 */
export abstract class ConnectionDeviceLink<Connection extends LlmConnection = LlmConnection> implements DeviceLink {
  readonly since = new Date().toISOString();
  /** Its claim in the directory, which its departure waits for (a socket may close before the claim is written). */
  attached: Promise<void> = Promise.resolve();
  abstract readonly protocol: string;

  constructor(
    readonly deviceId: string,
    readonly owner: string | undefined,
    protected readonly connection: Connection,
    private readonly clientTools: ClientToolsService,
  ) {}

  get principal(): string | undefined {
    return this.connection.principal;
  }

  get connectionId(): string {
    return this.connection.id;
  }

  agentTools(): DeviceTool[] {
    return this.connection.state.agentToolList();
  }

  validatorOf(toolName: string): ArgumentsValidator | undefined {
    return this.connection.state.agentTools.get(toolName)?.validate;
  }

  /** Stopped by the caller's signal or the socket's close (one controller and two listeners: Node 20's `AbortSignal.any` costs more than the call). */
  callTool(toolName: string, args: Record<string, unknown>, signal: AbortSignal): Promise<unknown> {
    const stop = new AbortController();
    const onAbort = () => stop.abort(signal.reason);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    const forget = this.connection.onClose(() =>
      stop.abort(new GatewayError(GatewayErrorCode.TOOL_UNAVAILABLE, `Device "${this.deviceId}" disconnected before it answered`)),
    );
    return this.clientTools.callForAgent(this.connection, toolName, args, stop.signal).finally(() => {
      signal.removeEventListener('abort', onAbort);
      forget();
    });
  }

  abstract say(turnId: string, text: string, options: { interrupt?: boolean; reminderId?: string }): QueuedPush;

  abstract startTurn(turnId: string, text: string): QueuedPush;

  whenRoom(): Promise<void> {
    return this.connection.queue().whenRoom();
  }

  replaced(): void {
    this.connection.close(CLOSE_REPLACED.code, CLOSE_REPLACED.reason);
  }
}

/** An LLM-gateway connection that named a device. */
class LlmDeviceLink extends ConnectionDeviceLink {
  readonly protocol = LLM_PROTOCOL;

  constructor(
    deviceId: string,
    owner: string | undefined,
    connection: LlmConnection,
    clientTools: ClientToolsService,
    private readonly turns: TurnStarter,
  ) {
    super(deviceId, owner, connection, clientTools);
  }

  say(turnId: string, text: string, options: { interrupt?: boolean; reminderId?: string }): QueuedPush {
    const { state } = this.connection;
    if (options.interrupt) for (const turn of [...state.turns.values()]) turn.cancel();
    const queue = this.connection.queue();
    const waiting = !queue.idle;
    let started: Promise<void>;
    try {
      started = queue.run(() => this.speak(turnId, text, options.reminderId));
    } catch (error) {
      throw busy(this.deviceId, error);
    }
    // Its one final `llm_response` is the whole answer: written, it was spoken as this protocol says.
    const finished = started.then(
      (): PushEnd => ({ state: 'spoken' }),
      (): PushEnd => ({ state: 'interrupted', reason: PUSH_CUT.disconnected }),
    );
    return { waiting, started, finished };
  }

  /**
   * Reached the device once its first frame (`processing`) is written; spoken once its final
   * `llm_response` is (the end of an answer in this protocol), interrupted when it ends otherwise
   * (`cancelled`, an error, the connection gone).
   */
  startTurn(turnId: string, text: string): QueuedPush {
    const waiting = !this.connection.queue().idle;
    let frames;
    try {
      frames = this.turns.start(this.connection, { type: 'text_input', text, turn_id: turnId }, { interrupt: false, origin: 'push' }).frames;
    } catch (error) {
      throw busy(this.deviceId, error);
    }
    let settle!: (sent: boolean) => void;
    const started = new Promise<void>((resolve, reject) => (settle = (sent) => (sent ? resolve() : reject(unheard(this.deviceId)))));
    let end!: (how: PushEnd) => void;
    const finished = new Promise<PushEnd>((resolve) => (end = resolve));
    let first = true;
    let how: PushEnd = { state: 'interrupted', reason: PUSH_CUT.cancelled };
    cleanedTurn(frames, this.connection).subscribe({
      next: (frame) => {
        const sent = this.connection.send(frame);
        if (first) settle(sent);
        first = false;
        if (!sent) how = { state: 'interrupted', reason: PUSH_CUT.disconnected };
        else if (frame.type === 'llm_response' && frame.is_final) how = { state: 'spoken' };
        else if (frame.type === 'error') how = { state: 'interrupted', reason: PUSH_CUT.failed };
        else if (frame.type === 'status' && frame.status === 'cancelled') how = { state: 'interrupted', reason: PUSH_CUT.cancelled };
      },
      complete: () => {
        settle(false);
        end(first ? { state: 'interrupted', reason: PUSH_CUT.disconnected } : how);
      },
    });
    return { waiting, started, finished };
  }

  /** A pushed sentence, in its turn: the answer, cleaned for speech as the connection asked, then `idle`; throws if the socket no longer takes the answer. */
  private speak(turnId: string, text: string, reminderId: string | undefined): void {
    if (!this.connection.isOpen) throw unheard(this.deviceId);
    const { state } = this.connection;
    const content = state.cleanResponses ? cleanForSpeech(text, languageOfText(text)) : text;
    const marks = { turn_id: turnId, origin: 'push' } as const;
    const answer: LlmServerFrame = { ...llmResponseFrame(content, []), ...(reminderId !== undefined && { reminder_id: reminderId }), ...marks };
    if (!this.connection.send(answer)) throw unheard(this.deviceId);
    this.connection.send({ ...statusFrame('idle', { session_id: state.sessionId }), ...marks });
  }
}

/**
 * The LLM gateway's part in the fleet: a connection that named a device (`Device-Id`) joins the
 * directory when it opens, tells it when its tools change, and leaves it when it closes.
 */
@Injectable()
export class DeviceLinks {
  private readonly logger = new Logger('Fleet');
  private readonly links = new WeakMap<LlmConnection, ConnectionDeviceLink<LlmConnection>>();

  constructor(
    private readonly devices: LocalDevices,
    private readonly clientTools: ClientToolsService,
    private readonly turns: TurnStarter,
  ) {}

  /**
   * Joins the directory, after the connection's session is open (the queue runs in order), so held
   * pushes come after `connected`. A protocol other than the LLM gateway's makes its own link.
   */
  open<Connection extends LlmConnection>(
    connection: Connection,
    makeLink: (deviceId: string, owner: string | undefined) => ConnectionDeviceLink<Connection> = (deviceId, owner) =>
      new LlmDeviceLink(deviceId, owner, connection, this.clientTools, this.turns) as unknown as ConnectionDeviceLink<Connection>,
  ): void {
    const deviceId = deviceIdOf(connection.request);
    if (deviceId === undefined) return;
    connection.state.deviceId = deviceId;
    const link = makeLink(deviceId, deviceOwnerOf(connection.request));
    this.links.set(connection, link);
    link.attached = this.devices.attach(link).catch((error: Error) => {
      this.logger.error(`Device ${deviceId} could not join the directory: ${error.message}`);
      connection.close(CLOSE_INTERNAL_ERROR, 'Device directory unavailable');
    });
  }

  toolsChanged(connection: LlmConnection): void {
    const link = this.links.get(connection);
    if (!link) return;
    void link.attached
      .then(() => this.devices.toolsChanged(link))
      .catch((error: Error) => this.logger.warn(`Device ${link.deviceId}: tools not updated in the directory: ${error.message}`));
  }

  close(connection: LlmConnection): void {
    const link = this.links.get(connection);
    if (!link) return;
    this.links.delete(connection);
    void link.attached
      .then(() => this.devices.detach(link))
      .catch((error: Error) => this.logger.warn(`Device ${link.deviceId} could not leave the directory: ${error.message}`));
  }
}
