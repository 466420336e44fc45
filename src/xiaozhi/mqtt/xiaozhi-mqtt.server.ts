import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown, Optional } from '@nestjs/common';
import { ApplicationConfig } from '@nestjs/core';
import { Aedes, AuthenticateError, Client } from 'aedes';
import { readFileSync } from 'fs';
import { createServer, Server, Socket } from 'net';
import { createServer as createTlsServer } from 'tls';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';
import { ThrottledWarning } from '../../core/logging/throttled-warning';
import { GatewayWsAdapter } from '../../core/ws/gateway-ws.adapter';
import { ActivationService } from '../../fleet/activation/activation.service';
import { MetricsService, VoiceEvent } from '../../metrics/metrics.service';
import { StartupError } from '../../shared/startup-error';
import { XIAOZHI_SESSION_PATH } from '../ota/configuration-answer';
import { XIAOZHI_PROTOCOL } from '../xiaozhi-protocol-name';
import { MqttConnectionCaps } from './mqtt-connection-caps';
import { MqttCredentials, uplinkTopic } from './mqtt-credentials';
import { MqttDeviceSocket } from './mqtt-device-socket';
import { MqttPacketSizeLimit } from './mqtt-packet-size';
import { UdpAudioServer } from './udp-audio';

/** The firmware's keep-alive, which the configuration answer repeats. */
export const MQTT_KEEPALIVE_S = 240;
/**
 * The longest keep-alive a client may ask for; none (0) is refused as well. The broker drops a
 * client that sends nothing for 1.5 times its keep-alive (MQTT 3.1.1, 3.1.2.10): without one, a
 * connection whose device vanished would be held for ever.
 */
export const MQTT_MAX_KEEPALIVE_S = 3600;
/** How long a connection may take to send its CONNECT (and, over TLS, to finish its handshake): the xiaozhi WebSocket's hello deadline. */
const CONNECT_TIMEOUT_MS = 10_000;
/** The port the firmware speaks MQTT over TLS on, and only there (`esp_mqtt.cc`, `ml307_mqtt.cc`: `broker_port == 8883`). */
export const FIRMWARE_MQTT_TLS_PORT = 8883;
/** CONNACK return codes of MQTT 3.1.1. */
const BAD_USERNAME_OR_PASSWORD = 4;
/** What aedes answers a keep-alive outside `keepaliveLimit` with. */
const KEEPALIVE_REFUSED = 6;

/** What the server keeps of one device's MQTT connection. */
interface MqttDevice {
  deviceId: string;
  client: Client;
  /** Its audio channel's socket, from a hello to a goodbye. */
  socket?: MqttDeviceSocket;
  /** Messages that came while its hello's connection was being admitted, in order. */
  waiting?: { payload: Buffer; type: unknown }[];
}

/** The device's TCP socket (aedes types it as any duplex stream). */
const tcpOf = (client: Client): Partial<Socket> => (client.conn ?? {}) as Partial<Socket>;

const plainAddress = (address: string | undefined): string | undefined => address?.replace(/^::ffff:/, '');

/**
 * The embedded MQTT server of xiaozhi devices (aedes on its own TCP listener, `XIAOZHI_MQTT_PORT`)
 * and their UDP audio socket. A device connects with the credentials its configuration answer
 * gave it ({@link MqttCredentials}); it may publish only to its own topic, subscribe to nothing,
 * and only JSON of at most `CLOUD_MAX_MESSAGE_SIZE` bytes. Its hello opens an audio channel
 * ({@link MqttDeviceSocket}), admitted to the xiaozhi WebSocket route as if it had upgraded there
 * (bearer token `XIAOZHI_DEVICE_TOKEN`, `Device-Id`, `Protocol-Version: 1`): the same guards,
 * caps, session and fleet. A second connection with the same client id replaces the first.
 */
@Injectable()
export class XiaozhiMqttServer implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Xiaozhi');
  /** One warning line per 10 s for each kind of refusal: a flood is logged, not one line per packet. */
  private readonly warnings = new Map<string, ThrottledWarning>();
  private readonly devices = new Map<Client, MqttDevice>();
  /** The connection each device id holds, to tell a reconnection that replaces it. */
  private readonly byId = new Map<string, Client>();
  /** The own secret each activated device connected with: its session is admitted with it. */
  private readonly deviceSecrets = new WeakMap<Client, string>();
  private broker?: Aedes;
  private server?: Server;
  private caps?: MqttConnectionCaps;
  private udp?: UdpAudioServer;
  private adapter?: GatewayWsAdapter;
  readonly credentials?: MqttCredentials;

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    private readonly application: ApplicationConfig,
    @Optional() private readonly metrics?: MetricsService,
    @Optional() private readonly activation?: ActivationService,
  ) {
    const settings = config.xiaozhi.mqtt;
    if (settings) this.credentials = new MqttCredentials(settings.secret);
  }

  /** The MQTT server's bound port (0 while off). */
  get port(): number {
    const address = this.server?.address();
    return address && typeof address === 'object' ? address.port : 0;
  }

  /** The UDP socket's bound port (0 while off). */
  get udpPort(): number {
    return this.udp?.port ?? 0;
  }

  /** Open audio channels (UDP sessions). */
  get audioSessions(): number {
    return this.udp?.sessionCount ?? 0;
  }

  async onApplicationBootstrap(): Promise<void> {
    const settings = this.config.xiaozhi.mqtt;
    const adapter = this.application.getIoAdapter();
    if (!settings || !adapter) return;
    if (!(adapter instanceof GatewayWsAdapter))
      throw new Error("xiaozhi over MQTT needs the gateway's WebSocket adapter: create the app with createGatewayApp()");
    this.adapter = adapter;
    const maxBytes = this.config.server.maxMessageBytes;
    this.broker = await Aedes.createBroker({
      maxClientsIdLength: 64,
      keepaliveLimit: MQTT_MAX_KEEPALIVE_S,
      connectTimeout: CONNECT_TIMEOUT_MS,
      authenticate: (client, username, password, done) => {
        void this.checkCredentials(client, username, password).then((deviceId) => {
          if (deviceId === undefined) return this.refuseCredentials(client, done);
          const held = this.byId.get(deviceId);
          if (held && !held.closed) {
            this.count('mqtt_replaced');
            this.logger.log(
              `MQTT: device ${deviceId} connected again from ${plainAddress(tcpOf(client).remoteAddress) ?? 'unknown'}: its older connection is closed`,
            );
          }
          done(null, true);
        });
      },

      authorizeSubscribe: (client, _subscription, done) => {
        this.count('mqtt_refused_subscribe');
        this.warn('subscribe', `MQTT: device ${client.id} tried to subscribe: refused (its messages are delivered without one)`);
        done(new Error('Subscriptions are refused'));
      },
      authorizePublish: (client, packet, done) => {
        if (!client) return done(null);
        if (packet.topic !== uplinkTopic(client.id) || packet.retain) {
          this.count('mqtt_refused_topic');
          this.warn(
            'topic',
            `MQTT: device ${client.id} published to "${packet.topic.slice(0, 80)}"${packet.retain ? ' (retained)' : ''}: refused, it may publish to ${uplinkTopic(client.id)} only`,
          );
          return done(new Error('Publish to your own topic only'));
        }
        const payload = Buffer.isBuffer(packet.payload) ? packet.payload : Buffer.from(packet.payload);
        if (payload.length > maxBytes) {
          this.count('mqtt_oversized');
          this.warn('oversized', `MQTT: device ${client.id} published ${payload.length} bytes: refused, over ${maxBytes} (CLOUD_MAX_MESSAGE_SIZE)`);
          return done(new Error('Message too big'));
        }
        this.received(client, payload);
        // Nothing more: no client subscribes, and nothing a device publishes is routed.
        packet.payload = Buffer.alloc(0);
        done(null);
      },
    });
    this.broker.on('client', (client) => {
      this.devices.set(client, { deviceId: client.id, client });
      this.byId.set(client.id, client);
    });
    this.broker.on('clientDisconnect', (client) => this.disconnected(client));
    this.broker.on('clientError', (client, error) => this.logger.debug?.(`MQTT: device ${client.id}: ${error.message}`));
    this.broker.on('connectionError', (client, error) => {
      if ((error as Error & { errorCode?: number }).errorCode !== KEEPALIVE_REFUSED)
        return this.logger.debug?.(`MQTT: a connection failed before CONNECT: ${error.message}`);
      this.count('mqtt_bad_keepalive');
      this.warn(
        'keepalive',
        `MQTT: refused client "${String(client.id ?? '').slice(0, 64)}" from ${plainAddress(tcpOf(client).remoteAddress) ?? 'unknown'}: a keep-alive of 1 to ${MQTT_MAX_KEEPALIVE_S} s is needed`,
      );
    });
    this.broker.on('keepaliveTimeout', (client) => {
      this.count('mqtt_keepalive_expired');
      this.warn('keepalive-expired', `MQTT: device ${client.id} sent nothing for 1.5 times its keep-alive: connection dropped`);
    });
    this.udp = new UdpAudioServer((event) => this.count(event));
    const broker = this.broker;
    const caps = new MqttConnectionCaps(settings.maxConnections, settings.maxConnectionsPerAddress);
    /** A TCP connection accepted: counted against the caps (closed at once past them); true if it may go on. */
    const admitted = (connection: Socket): boolean => {
      const refusal = caps.admit(connection);
      if (refusal === undefined) return true;
      this.count('mqtt_refused_connection');
      this.warn(
        'connections',
        refusal === 'total'
          ? `MQTT: refused a connection from ${plainAddress(connection.remoteAddress) ?? 'unknown'}: ${settings.maxConnections} are held (XIAOZHI_MQTT_MAX_CONNECTIONS)`
          : `MQTT: refused a connection from ${plainAddress(connection.remoteAddress) ?? 'unknown'}: it holds ${settings.maxConnectionsPerAddress} (XIAOZHI_MQTT_MAX_CONNECTIONS_PER_ADDRESS)`,
      );
      connection.destroy();
      return false;
    };
    /** The MQTT byte stream of an admitted connection (over TLS: once its handshake is done), to the broker. */
    const serve = (stream: Socket): void => {
      new MqttPacketSizeLimit(stream, maxBytes + 1024, () => {
        this.count('mqtt_oversized');
        this.warn(
          'oversized',
          `MQTT: a client from ${plainAddress(stream.remoteAddress) ?? 'unknown'} sent a packet over ${maxBytes + 1024} bytes: connection closed`,
        );
      });
      broker.handle(stream);
    };
    if (settings.tls) {
      const tlsServer = createTlsServer({
        cert: readTlsFile('XIAOZHI_MQTT_TLS_CERT', settings.tls.certFile),
        key: readTlsFile('XIAOZHI_MQTT_TLS_KEY', settings.tls.keyFile),
        handshakeTimeout: CONNECT_TIMEOUT_MS,
      });
      tlsServer.on('connection', (connection: Socket) => admitted(connection));
      tlsServer.on('secureConnection', serve);
      tlsServer.on('tlsClientError', (error) => this.logger.debug?.(`MQTT: a TLS handshake failed: ${error.message}`));
      this.server = tlsServer;
    } else {
      this.server = createServer((connection: Socket) => admitted(connection) && serve(connection));
    }
    this.caps = caps;
    await listen(this.server, settings.port, settings.host);
    try {
      await this.udp.listen(settings.udpPort, settings.host);
    } catch (error) {
      throw new StartupError(`XIAOZHI_UDP_PORT: cannot listen on ${settings.host}:${settings.udpPort} over UDP (${(error as Error).message})`);
    }
    this.logger.log(
      `xiaozhi devices over MQTT${settings.tls ? ' over TLS' : ''} on ${settings.host}:${this.port}, their audio over UDP on port ${this.udpPort} (XIAOZHI_MQTT_PORT, XIAOZHI_UDP_PORT)`,
    );
    const advertised = this.advertisedPort;
    if (settings.tls && advertised !== FIRMWARE_MQTT_TLS_PORT)
      this.logger.warn(
        `MQTT is served over TLS, but devices are told port ${advertised}: the firmware speaks TLS on port ${FIRMWARE_MQTT_TLS_PORT} only, and will connect in plain MQTT. Listen on ${FIRMWARE_MQTT_TLS_PORT} or set XIAOZHI_MQTT_PUBLIC_ENDPOINT to a host:${FIRMWARE_MQTT_TLS_PORT} that reaches it`,
      );
    if (!settings.tls && advertised === FIRMWARE_MQTT_TLS_PORT)
      this.logger.warn(
        `Devices are told MQTT port ${FIRMWARE_MQTT_TLS_PORT}, where the firmware speaks TLS, but this server speaks plain MQTT: set XIAOZHI_MQTT_TLS_CERT and XIAOZHI_MQTT_TLS_KEY, or advertise another port (unless a TLS-terminating proxy is in front)`,
      );
  }

  /** MQTT connections held (accepted, authenticated or not). */
  get connections(): number {
    return this.caps?.open ?? 0;
  }

  /** The port the configuration answer's endpoint names: `XIAOZHI_MQTT_PUBLIC_ENDPOINT`'s, else the bound one. */
  private get advertisedPort(): number {
    const endpoint = this.config.xiaozhi.mqtt?.publicEndpoint;
    return endpoint ? Number(endpoint.slice(endpoint.lastIndexOf(':') + 1)) : this.port;
  }

  async onApplicationShutdown(): Promise<void> {
    const server = this.server;
    const broker = this.broker;
    this.server = undefined;
    this.broker = undefined;
    for (const device of this.devices.values()) device.socket?.dropped();
    if (broker) await new Promise<void>((resolve) => broker.close(() => resolve()));
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
    await this.udp?.close();
  }

  /**
   * The device a CONNECT proves: its derived password, or with activation on its own secret (then
   * kept, as the bearer its session is admitted with).
   */
  private async checkCredentials(client: Client, username: string | undefined, password: Buffer | undefined): Promise<string | undefined> {
    if (!this.activation?.enabled) return this.credentials!.check(client.id, username, password);
    try {
      const deviceId = await MqttCredentials.checkDeviceSecret(client.id, username, password, (secret) => this.activation!.deviceOfSecret(secret));
      if (deviceId !== undefined) this.deviceSecrets.set(client, password!.toString('utf8'));
      return deviceId;
    } catch (error) {
      this.logger.warn(`MQTT: device ${client.id.slice(0, 64)}'s credential could not be checked: ${(error as Error).message}`);
      return undefined;
    }
  }

  private refuseCredentials(client: Client, done: (error: AuthenticateError | null, success: boolean) => void): void {
    this.count('mqtt_bad_credentials');
    this.warn(
      'credentials',
      `MQTT: refused client "${client.id.slice(0, 64)}" from ${plainAddress(tcpOf(client).remoteAddress) ?? 'unknown'}: bad credentials`,
    );
    const error = new Error('Bad username or password') as AuthenticateError;
    error.returnCode = BAD_USERNAME_OR_PASSWORD;
    done(error, false);
  }

  /** One message a device published to its topic: to its audio channel, whose hello opens it. */
  private received(client: Client, payload: Buffer): void {
    const device = this.devices.get(client);
    if (!device) return;
    let type: unknown;
    try {
      type = (JSON.parse(payload.toString('utf8')) as { type?: unknown } | null)?.type;
    } catch {
      this.count('mqtt_not_json');
      this.warn('not-json', `MQTT: device ${device.deviceId} published ${payload.length} bytes that are not JSON: dropped`);
      return;
    }
    if (device.waiting) {
      device.waiting.push({ payload, type });
      return;
    }
    if (device.socket && device.socket.readyState === 1) return device.socket.receive(payload, type);
    if (type === 'hello') void this.open(device, payload);
    else this.logger.debug?.(`MQTT: device ${device.deviceId} sent ${String(type).slice(0, 20)} with no audio channel open: dropped`);
  }

  /** A hello with no channel open: a socket for the channel, admitted to the xiaozhi route, then the hello and what came meanwhile. */
  private async open(device: MqttDevice, hello: Buffer): Promise<void> {
    const { client, deviceId } = device;
    const settings = this.config.xiaozhi.mqtt!;
    const udpHost = settings.udpPublicHost ?? plainAddress(tcpOf(client).localAddress) ?? '127.0.0.1';
    const socket = new MqttDeviceSocket(client, deviceId, this.udp!, { host: udpHost, port: settings.udpPublicPort });
    device.waiting = [{ payload: hello, type: 'hello' }];
    const token = this.deviceSecrets.get(client) ?? this.config.xiaozhi.deviceToken;
    const headers: Record<string, string> = { 'device-id': deviceId, 'client-id': client.id, 'protocol-version': '1' };
    if (token !== undefined) headers.authorization = `Bearer ${token}`;
    let admission;
    try {
      admission = await this.adapter!.admitSocket(XIAOZHI_SESSION_PATH.replace(/\/$/, ''), socket, {
        headers,
        remoteAddress: plainAddress(tcpOf(client).remoteAddress),
        remotePort: tcpOf(client).remotePort,
      });
    } catch (error) {
      admission = { refused: { status: 500, message: (error as Error).message } };
    }
    const waiting = device.waiting;
    device.waiting = undefined;
    if ('refused' in admission) {
      this.count('mqtt_refused_admission');
      this.logger.warn(`MQTT: device ${deviceId}'s session was refused (${admission.refused.status}): ${admission.refused.message}`);
      socket.send(JSON.stringify({ type: 'alert', status: 'error', message: admission.refused.message, emotion: 'sad' }));
      socket.terminate();
      return;
    }
    if (this.devices.get(client) !== device || client.closed) {
      socket.dropped();
      return;
    }
    device.socket = socket;
    for (const message of waiting ?? []) socket.receive(message.payload, message.type);
  }

  private disconnected(client: Client): void {
    const device = this.devices.get(client);
    if (!device) return;
    this.devices.delete(client);
    if (this.byId.get(device.deviceId) === client) this.byId.delete(device.deviceId);
    device.socket?.dropped();
  }

  private count(event: VoiceEvent): void {
    this.metrics?.voiceEvent(XIAOZHI_PROTOCOL, event);
  }

  /** A refusal's warning, at most one line per 10 s of its kind (every one is counted). */
  private warn(kind: string, message: string): void {
    let warning = this.warnings.get(kind);
    if (!warning) this.warnings.set(kind, (warning = new ThrottledWarning(this.logger)));
    warning.warn(message);
  }
}

function readTlsFile(setting: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new StartupError(`${setting}: cannot read ${path} (${(error as Error).message})`);
  }
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', (error) => reject(new StartupError(`XIAOZHI_MQTT_PORT: cannot listen on ${host}:${port} (${error.message})`)));
    server.listen(port, host, () => resolve());
  });
}
