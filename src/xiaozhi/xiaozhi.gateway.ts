import { Inject, Logger } from '@nestjs/common';
import { randomUUID } from 'crypto';
import { checkOpusFormat, OpusFormat } from '../assistant/audio/opus-format';
import { SILERO_SAMPLE_RATE } from '../assistant/audio/silero-vad-model';
import { GatewayError, GatewayErrorCode } from '../core/errors/gateway-error';
import { isPlainObject } from '../core/plain-object';
import { OnFrame } from '../core/ws/on-frame.decorator';
import { FrameEvent } from '../core/ws/frame-parser';
import { ProtocolGateway, ProtocolGatewayHooks } from '../core/ws/protocol-gateway.decorator';
import { deviceIdOf, DeviceIdentityGuard } from '../fleet/device-identity.guard';
import { ClientToolsService } from '../llm-gateway/client-tools.service';
import { DeviceLinks } from '../llm-gateway/device-link';
import { MAX_WAITING_REQUESTS } from '../llm-gateway/llm-connection';
import { SessionBindingService } from '../llm-gateway/session-binding.service';
import { unframe } from './audio-framing';
import { audioTransportOf } from './audio-transport';
import { DeviceMcpTools } from './device-mcp-tools';
import { DEVICE_BOOT_RECORDS, DeviceBootRecords } from './ota/device-boot-records';
import type { VoiceSession } from './voice-session';
import { VoiceSessions } from './voice-sessions';
import { XiaozhiConnection, XiaozhiConnectionState } from './xiaozhi-connection';
import { XiaozhiDeviceLink } from './xiaozhi-device-link';
import {
  abortSchema,
  goodbyeSchema,
  HelloMessage,
  helloSchema,
  ListenMessage,
  listenSchema,
  McpMessage,
  mcpSchema,
  serverHello,
  XiaozhiServerMessage,
} from './xiaozhi-messages';
import { XIAOZHI_PROTOCOL } from './xiaozhi-protocol-name';
import { framingOf, XiaozhiUpgradeGuard } from './xiaozhi-upgrade.guard';

/** How long a device has to send its hello after connecting (the firmware sends it at once, and waits as long for ours). */
export const HELLO_TIMEOUT_MS = 10_000;
/** WebSocket's "unsupported data": a hello asking for audio (or a transport) the gateway cannot serve. */
export const CLOSE_UNSUPPORTED_AUDIO = 1003;
/** What a device sends by default (`main/protocols/websocket_protocol.cc`): 16 kHz Opus in 60 ms packets. */
const DEFAULT_INPUT: OpusFormat = { sampleRate: 16000, frameDurationMs: 60 };

/** Refused before the hello: everything but the hello needs the voice session it opens. */
class HelloFirst extends GatewayError {
  constructor(what: string) {
    super(GatewayErrorCode.INVALID_MESSAGE, `Send hello before ${what}`);
  }
}

/**
 * xiaozhi devices over WebSocket (`docs/websocket.md` of 78/xiaozhi-esp32) at `/xiaozhi/v1/`: the
 * bearer token, `Device-Id` and `Protocol-Version` are checked at the upgrade; the device's hello
 * opens its voice session ({@link VoiceSession}) and, with `features.mcp`, its MCP tools
 * ({@link DeviceMcpTools}); it joins the fleet under its `Device-Id`. Text frames are its JSON
 * messages, binary frames its audio. A message the gateway cannot take is answered with an
 * `alert` (the only error the firmware shows) and the connection stays open; a hello the gateway
 * cannot serve (audio it cannot hear, another format or transport) is answered with an `alert`
 * and a 1003 close.
 */
@ProtocolGateway({
  protocol: XIAOZHI_PROTOCOL,
  path: '/xiaozhi/v1',
  upgradeGuards: [XiaozhiUpgradeGuard, DeviceIdentityGuard],
  serial: { maxWaiting: MAX_WAITING_REQUESTS, whenFull: 'refuse' },
  oversizedFrames: 'close',
})
export class XiaozhiGateway implements ProtocolGatewayHooks<XiaozhiConnectionState> {
  private readonly logger = new Logger('Xiaozhi');

  constructor(
    private readonly binding: SessionBindingService,
    private readonly voices: VoiceSessions,
    private readonly deviceTools: DeviceMcpTools,
    private readonly clientTools: ClientToolsService,
    private readonly links: DeviceLinks,
    @Inject(DEVICE_BOOT_RECORDS) private readonly boots: DeviceBootRecords,
  ) {}

  onOpen(connection: XiaozhiConnection): void {
    connection.state = new XiaozhiConnectionState(framingOf(connection.request), randomUUID());
    // A device has no `configure` to ask for its conversation's context: its session keeps it from the start.
    void connection.queue().run(() =>
      this.binding
        .open(connection)
        .then(() => this.binding.configure(connection, { type: 'configure', enable_context: true }))
        .catch((error: unknown) => {
          this.logger.error(`Could not open a session: ${(error as Error).message}`);
          connection.send(alertOf(connection, 'Could not open a session', 'sad'));
          connection.close(1011, 'Session store unavailable');
        }),
    );
    const noHello = setTimeout(() => {
      if (!connection.state.voice) connection.close(1008, `No hello within ${HELLO_TIMEOUT_MS / 1000} s`);
    }, HELLO_TIMEOUT_MS);
    connection.onClose(() => clearTimeout(noHello));
  }

  onClose(connection: XiaozhiConnection): void {
    void connection.state.voice?.close();
    this.binding.release(connection);
    this.clientTools.release(connection);
    this.links.close(connection);
  }

  /**
   * The device's hello: its audio is checked (mono Opus at 16 kHz, the rate speech is heard at,
   * in a frame duration Opus has), and answered with the server's hello; the device joins the
   * fleet, and its MCP tools are listed when it has some. A second hello is answered again.
   */
  @OnFrame('hello', { schema: helloSchema })
  hello(hello: HelloMessage, connection: XiaozhiConnection): XiaozhiServerMessage | undefined {
    const { state } = connection;
    const transport = audioTransportOf(connection);
    const expected = transport?.helloTransport ?? 'websocket';
    if (hello.transport !== undefined && hello.transport !== expected)
      throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, `transport must be "${expected}" on this connection, not "${hello.transport}"`);
    // Over MQTT + UDP each hello opens the audio channel afresh (new key and nonce; the firmware restarts its sequence numbers).
    const answer = () => serverHello(state.helloSessionId, this.voices.outputFormat, transport?.openAudioChannel(state.helloSessionId));
    if (state.voice) return answer();
    const params = hello.audio_params ?? {};
    const input: OpusFormat = {
      sampleRate: (params.sample_rate ?? DEFAULT_INPUT.sampleRate) as OpusFormat['sampleRate'],
      frameDurationMs: (params.frame_duration ?? DEFAULT_INPUT.frameDurationMs) as OpusFormat['frameDurationMs'],
    };
    const problem = audioProblem(input);
    if (problem) return this.refuseHello(connection, problem);
    state.voice = this.voices.open(connection, input);
    connection.send(answer());
    void this.joinFleet(connection, state.voice, hello.features?.mcp === true);
    return undefined;
  }

  @OnFrame('listen', { schema: listenSchema })
  listen(message: ListenMessage, connection: XiaozhiConnection): XiaozhiServerMessage | undefined {
    const voice = connection.state.voice;
    if (!voice) throw new HelloFirst('listen');
    if (message.state === 'start') voice.listen(message.mode ?? 'auto');
    else if (message.state === 'detect') voice.wakeWord();
    else if (!voice.stopListening()) throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, 'listen stop without a listen start');
    return undefined;
  }

  @OnFrame('abort', { schema: abortSchema })
  abort(_message: unknown, connection: XiaozhiConnection): void {
    const voice = connection.state.voice;
    if (!voice) throw new HelloFirst('abort');
    voice.abort();
  }

  @OnFrame('mcp', { schema: mcpSchema })
  mcp(message: McpMessage, connection: XiaozhiConnection): void {
    const { mcp, voice } = connection.state;
    if (!voice) throw new HelloFirst('mcp');
    if (!mcp) throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, 'mcp without features.mcp in the hello: the gateway sent this device no MCP request');
    mcp.receive(message.payload as Record<string, unknown>);
  }

  /** The device closes its audio channel (the firmware sends it over MQTT, where its MQTT connection stays up for the next hello; over WebSocket it closes the socket): the connection is closed for it. */
  @OnFrame('goodbye', { schema: goodbyeSchema })
  goodbye(_message: unknown, connection: XiaozhiConnection): void {
    connection.close(1000, 'Goodbye');
  }

  @OnFrame(FrameEvent.UNKNOWN_TYPE)
  unknown(message: { type?: unknown }): never {
    throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, `Unknown message type ${JSON.stringify(message.type)?.slice(0, 40) ?? '(none)'}`);
  }

  /** A binary message: one Opus packet in the connection's framing. */
  onBinary(connection: XiaozhiConnection, data: Buffer): void {
    const voice = connection.state.voice;
    if (!voice) {
      this.voices.count('audio_before_hello');
      return;
    }
    const read = unframe(connection.state.framing, data);
    if ('problem' in read) voice.badFrame(read.problem);
    else voice.audio(read.packet);
  }

  /**
   * Any refused message, as the firmware shows errors: an `alert`. A hello refused before the
   * session opened (Opus in stereo, another format or transport) is closed with 1003 as well, as
   * a hello for a rate the gateway cannot hear is: the firmware sends one hello and waits for
   * the answer, and this connection's session could never open.
   */
  onFrameError(error: unknown, frame: unknown, connection: XiaozhiConnection): XiaozhiServerMessage | undefined {
    const message = error instanceof Error ? error.message : String(error);
    if (isPlainObject(frame) && frame.type === 'hello' && connection.state && !connection.state.voice) return this.refuseHello(connection, message);
    return alertOf(connection, message, 'confused');
  }

  /** A hello the gateway cannot serve: its alert, and a 1003 close (the firmware waits for a hello that cannot come). */
  private refuseHello(connection: XiaozhiConnection, problem: string): undefined {
    connection.send(alertOf(connection, problem, 'sad'));
    connection.close(CLOSE_UNSUPPORTED_AUDIO, problem.slice(0, 120));
    return undefined;
  }

  /** The device joins the fleet with the board it reported at boot (if the report can be read), then its MCP tools are listed. */
  private async joinFleet(connection: XiaozhiConnection, voice: VoiceSession, mcp: boolean): Promise<void> {
    const deviceId = deviceIdOf(connection.request);
    const boot = deviceId === undefined ? undefined : await this.boots.get(deviceId).catch(() => undefined);
    if (!connection.isOpen) return;
    this.links.open(connection, (id, owner) => new XiaozhiDeviceLink(id, owner, connection, this.clientTools, voice, boot?.userAgent));
    this.logger.log(`Device ${deviceId} said hello (audio framing ${connection.state.framing}${mcp ? ', MCP tools' : ''})`);
    if (mcp) this.deviceTools.start(connection);
  }
}

/** An error as the firmware shows one: an `alert`. */
function alertOf(connection: XiaozhiConnection, message: string, emotion: string): XiaozhiServerMessage {
  return { type: 'alert', session_id: connection.state?.helloSessionId ?? '', status: 'error', message, emotion };
}

/** Why the gateway cannot hear audio of `format`, or `undefined` when it can. */
function audioProblem(format: OpusFormat): string | undefined {
  try {
    checkOpusFormat(format);
  } catch (error) {
    return (error as Error).message;
  }
  return format.sampleRate === SILERO_SAMPLE_RATE
    ? undefined
    : `Send audio at ${SILERO_SAMPLE_RATE} Hz, the rate speech is heard at, not ${format.sampleRate} Hz`;
}
