import { randomUUID } from 'crypto';
import { createSocket } from 'dgram';
import { connectAsync, MqttClient } from 'mqtt';
import { monitorEventLoopDelay } from 'perf_hooks';
import { WebSocket } from 'ws';
import { sealUplink, UDP_HEADER_BYTES } from '../../test/support/xiaozhi/udp-seal';
import { configurationOf, DEVICE_HELLO, FRAME_MS, sessionHeaders } from './xiaozhi-firmware';
import type { Exchange, XiaozhiAnswer, XiaozhiCommand } from './xiaozhi-swarm';

/**
 * A client process holding xiaozhi devices (bench/support/xiaozhi-swarm.ts starts it and drives it
 * over IPC). Each device does what the firmware (78/xiaozhi-esp32) does: asks the configuration
 * URL, opens the WebSocket it names with its token, sends its hello and waits for the server's;
 * then, told to talk, sends `listen start` (auto mode) and its microphone's Opus packets one per
 * 60 ms on an absolute schedule, until `tts start` comes; plays (here: stamps) the answer's frames
 * until `tts stop`, and listens again at once. Times are this process's monotonic clock. Over
 * MQTT + UDP (`transport: 'mqtt'`), as `main/protocols/mqtt_protocol.cc`: the configuration
 * answer's MQTT credentials, JSON published to its topic, the hello's UDP channel for AES-CTR
 * sealed Opus both ways (a reply packet is stamped on arrival, as the firmware would decrypt it).
 */
const nowMs = () => Number(process.hrtime.bigint()) / 1e6;
const LOOP_RESOLUTION_MS = 10;

/** What a device talks through: a WebSocket, or an MQTT connection with a UDP audio channel. */
interface DeviceLink {
  readonly open: boolean;
  sendText(text: string): void;
  sendAudio(packet: Buffer): void;
  /** Calls `listener` once when the link closes; returns what stops listening. */
  onClose(listener: (why: string) => void): () => void;
  /** Drops the link at once. */
  reset(): void;
}

interface Device {
  id: string;
  link: DeviceLink;
  onText?: (message: any) => void;
  onBinary?: () => void;
}

/** A WebSocket device: text frames and binary Opus frames (protocol version 1). */
function webSocketLink(socket: WebSocket): DeviceLink {
  return {
    get open() {
      return socket.readyState === WebSocket.OPEN;
    },
    sendText: (text) => socket.send(text),
    sendAudio: (packet) => socket.send(packet),
    onClose: (listener) => {
      const onClose = (code: number) => listener(`the connection closed (${code})`);
      socket.once('close', onClose);
      return () => socket.off('close', onClose);
    },
    // A TCP reset, as the fleet's swarm does: no TIME_WAIT left behind to exhaust the ports.
    reset: () => {
      const tcp = (socket as unknown as { _socket?: { resetAndDestroy?: () => void } })._socket;
      if (tcp?.resetAndDestroy) tcp.resetAndDestroy();
      else socket.terminate();
    },
  };
}

const devices: Device[] = [];

function send(answer: XiaozhiAnswer | { type: 'ready' }, id?: number): void {
  process.send?.({ ...answer, id });
}

/** Boots one device; resolves with the milliseconds from the configuration request to the server's hello (over MQTT without `channel`: to its CONNACK). */
async function boot(baseUrl: string, id: string, direct?: { token: string }, mqtt?: { channel: boolean }): Promise<number> {
  const start = nowMs();
  const clientId = randomUUID();
  if (mqtt) {
    const config = (await configurationOf(baseUrl, id, clientId)) as { mqtt?: MqttSection };
    if (!config.mqtt) throw new Error(`the configuration answer names no MQTT server: ${JSON.stringify(config).slice(0, 300)}`);
    await openMqtt(config.mqtt, id, mqtt.channel);
    return nowMs() - start;
  }
  const config = direct
    ? { websocket: { url: `${baseUrl.replace(/^http/, 'ws')}/xiaozhi/v1/`, token: direct.token } }
    : await configurationOf(baseUrl, id, clientId);
  const { url, token } = config.websocket ?? {};
  if (!url || !token) throw new Error(`the configuration answer names no WebSocket and token: ${JSON.stringify(config).slice(0, 300)}`);
  await open(url, token, id, clientId);
  return nowMs() - start;
}

/** Opens the device's session at `url` with `token` and says hello; resolves once the server's hello came. */
async function open(url: string, token: string, id: string, clientId: string): Promise<void> {
  const socket = new WebSocket(url, {
    headers: sessionHeaders(token, id, clientId),
    perMessageDeflate: false,
  });
  const device: Device = { id, link: webSocketLink(socket) };
  devices.push(device);
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => socket.send(DEVICE_HELLO));
    socket.once('message', (data: Buffer, binary: boolean) => {
      const message = binary ? undefined : JSON.parse(data.toString());
      if (message?.type !== 'hello' || message.audio_params?.frame_duration !== FRAME_MS)
        return reject(new Error(`expected the server's hello, got ${binary ? 'audio' : data.toString().slice(0, 300)}`));
      socket.on('message', (next: Buffer, isBinary: boolean) => {
        if (isBinary) device.onBinary?.();
        else device.onText?.(JSON.parse(next.toString()));
      });
      resolve();
    });
    socket.once('error', reject);
    socket.once('unexpected-response', (_request, answer) => reject(new Error(`${url} refused the upgrade: HTTP ${answer.statusCode}`)));
    socket.once('close', (code, reason) => reject(new Error(`the connection closed (${code} ${reason}) before the server's hello`)));
  });
}

/** The configuration answer's `mqtt` section. */
interface MqttSection {
  endpoint: string;
  client_id: string;
  username: string;
  password: string;
  publish_topic: string;
  keepalive?: number;
}

/**
 * Connects the device to the MQTT server with its credentials; with `channel`, says hello and
 * opens the UDP channel the server's hello describes (`MqttProtocol::OpenAudioChannel`).
 */
async function openMqtt(section: MqttSection, id: string, channel: boolean): Promise<void> {
  const client: MqttClient = await connectAsync(`mqtt://${section.endpoint}`, {
    clientId: section.client_id,
    username: section.username,
    password: section.password,
    keepalive: section.keepalive ?? 240,
    protocolVersion: 4,
    reconnectPeriod: 0,
    connectTimeout: 30_000,
  });
  const publish = (text: string) => client.publish(section.publish_topic, text, { qos: 0 });
  /** The audio channel, once the server's hello opened it. */
  const audio: { udp?: ReturnType<typeof createSocket>; key?: Buffer; nonce?: Buffer } = {};
  let sequence = 0;
  let remoteSequence = 0;
  const epoch = nowMs();
  const device: Device = {
    id,
    link: {
      get open() {
        return client.connected;
      },
      sendText: publish,
      sendAudio: (packet) => {
        if (!audio.udp || !audio.key || !audio.nonce) return;
        sequence += 1;
        audio.udp.send(sealUplink(audio.key, audio.nonce, packet, Math.round(nowMs() - epoch), sequence));
      },
      onClose: (listener) => {
        const onClose = () => listener('the MQTT connection closed');
        client.once('close', onClose);
        return () => client.off('close', onClose);
      },
      reset: () => {
        audio.udp?.close();
        audio.udp = undefined;
        (client.stream as unknown as { resetAndDestroy?: () => void }).resetAndDestroy?.();
        client.end(true);
      },
    },
  };
  devices.push(device);
  client.on('message', (_topic, payload) => device.onText?.(JSON.parse(payload.toString('utf8'))));
  if (!channel) return;
  const hello = await new Promise<any>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no server hello within 30 s')), 30_000);
    device.onText = (message) => {
      if (message.type !== 'hello') return;
      clearTimeout(timer);
      device.onText = undefined;
      if (message.transport !== 'udp' || !message.udp) return reject(new Error(`expected a udp hello, got ${JSON.stringify(message).slice(0, 300)}`));
      resolve(message);
    };
    publish(
      JSON.stringify({
        type: 'hello',
        version: 3,
        transport: 'udp',
        features: { mcp: false },
        audio_params: { format: 'opus', sample_rate: 16000, channels: 1, frame_duration: FRAME_MS },
      }),
    );
  });
  audio.key = Buffer.from(hello.udp.key, 'hex');
  audio.nonce = Buffer.from(hello.udp.nonce, 'hex');
  const socket = createSocket('udp4');
  // The firmware's checks (type, length, sequence above the last); decryption is not needed to stamp the packet's arrival.
  socket.on('message', (datagram: Buffer) => {
    if (datagram.length < UDP_HEADER_BYTES || datagram[0] !== 0x01 || datagram.readUInt16BE(2) !== datagram.length - UDP_HEADER_BYTES) return;
    const next = datagram.readUInt32BE(12);
    if (next <= remoteSequence) return;
    remoteSequence = next;
    device.onBinary?.();
  });
  await new Promise<void>((resolve) => socket.connect(hello.udp.port, hello.udp.server, () => resolve()));
  audio.udp = socket;
}

async function connect(command: Extract<XiaozhiCommand, { type: 'connect' }>): Promise<XiaozhiAnswer> {
  const latenciesMs: number[] = [];
  let next = 0;
  let failure: Error | undefined;
  const worker = async () => {
    while (next < command.ids.length && !failure) {
      const id = command.ids[next++];
      try {
        latenciesMs.push(await boot(command.baseUrl, id, command.direct, command.mqtt));
      } catch (error) {
        failure ??= error as Error;
      }
    }
  };
  const start = nowMs();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, command.timeoutMs)));
  await Promise.race([Promise.all(Array.from({ length: Math.min(command.concurrency, command.ids.length) }, worker)), timeout]);
  clearTimeout(timer);
  if (!failure && latenciesMs.length < command.ids.length)
    failure = new Error(`only ${latenciesMs.length} of ${command.ids.length} devices said hello within ${command.timeoutMs / 1000} s`);
  return { type: 'connect', startMs: start, endMs: nowMs(), latenciesMs, error: failure && `${failure.message} (after ${latenciesMs.length} connected)` };
}

/**
 * One exchange of `device`: listen, speak, hear the answer. Resolves when `tts stop` came, or
 * with a problem once `maxPackets` went unanswered, the socket closed, or `deadline` passed.
 */
function exchange(
  device: Device,
  index: number,
  round: number,
  talk: Extract<XiaozhiCommand, { type: 'talk' }>,
  audio: Buffer[],
  silence: Buffer,
  deadline: number,
): Promise<Exchange> {
  const record: Exchange = {
    device: index,
    round,
    listenAt: -1,
    lastSpeechAt: -1,
    sttAt: -1,
    llmAt: -1,
    ttsStartAt: -1,
    firstFrameAt: -1,
    ttsStopAt: -1,
    frames: [],
    sentences: 0,
    packetsSent: 0,
  };
  return new Promise((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    let over = false;
    const finish = (problem?: string) => {
      if (over) return;
      over = true;
      if (problem) record.problem ??= problem;
      clearTimeout(timer);
      clearTimeout(deadlineTimer);
      device.onText = undefined;
      device.onBinary = undefined;
      stopListening();
      resolve(record);
    };
    const stopListening = device.link.onClose((why) => finish(why));
    const deadlineTimer = setTimeout(() => finish('the time ran out'), Math.max(0, deadline - nowMs()));

    device.onText = (message) => {
      const at = nowMs();
      if (message.type === 'stt') {
        record.sttAt = at;
        if (message.text !== talk.transcript) record.problem ??= `stt said ${JSON.stringify(message.text)}`;
      } else if (message.type === 'llm') {
        record.llmAt = at;
      } else if (message.type === 'tts' && message.state === 'start') {
        record.ttsStartAt = at;
        clearTimeout(timer); // the firmware stops sending its microphone when the answer starts
      } else if (message.type === 'tts' && message.state === 'sentence_start') {
        record.sentences += 1;
      } else if (message.type === 'tts' && message.state === 'stop') {
        record.ttsStopAt = at;
        finish();
      } else if (message.type === 'alert') {
        record.problem ??= `alert: ${message.message}`;
      }
    };
    device.onBinary = () => {
      const at = nowMs();
      if (record.ttsStartAt < 0 || record.ttsStopAt >= 0) {
        record.problem ??= 'an audio frame outside tts start / stop';
        return;
      }
      if (record.firstFrameAt < 0) record.firstFrameAt = at;
      record.frames.push(Math.round((at - record.firstFrameAt) * 100) / 100);
    };

    device.link.sendText(JSON.stringify({ session_id: '', type: 'listen', state: 'start', mode: 'auto' }));
    record.listenAt = nowMs();
    const tick = () => {
      if (over || record.ttsStartAt >= 0) return;
      const packet = record.packetsSent < audio.length ? audio[record.packetsSent] : silence;
      device.link.sendAudio(packet);
      if (record.packetsSent === talk.lastSpeechPacket) record.lastSpeechAt = nowMs();
      record.packetsSent += 1;
      if (record.packetsSent >= talk.maxPackets) return finish(`no answer after ${talk.maxPackets} packets`);
      timer = setTimeout(tick, Math.max(0, record.listenAt + record.packetsSent * FRAME_MS - nowMs()));
    };
    tick();
  });
}

async function talk(command: Extract<XiaozhiCommand, { type: 'talk' }>): Promise<XiaozhiAnswer> {
  const audio = command.packets.map((packet) => Buffer.from(packet, 'base64'));
  const silence = Buffer.from(command.silencePacket, 'base64');
  const start = nowMs();
  const deadline = start + command.timeoutMs;
  const delay = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
  delay.enable();
  const exchanges: Exchange[] = [];
  const open = devices.filter((device) => device.link.open);
  await Promise.all(
    open.map(async (device, index) => {
      const offset = (index * command.spreadMs) / open.length;
      await new Promise((resolve) => setTimeout(resolve, offset));
      for (let round = 0; round < command.rounds && nowMs() < deadline; round += 1) {
        const record = await exchange(device, index, round, command, audio, silence, deadline);
        exchanges.push(record);
        if (record.problem && !device.link.open) break;
      }
    }),
  );
  delay.disable();
  // The histogram holds the timer's whole intervals: how late it fired is what exceeds the resolution.
  const ms = (ns: number) => Math.max(0, Math.round(ns / 1e4) / 100 - LOOP_RESOLUTION_MS);
  return { type: 'talk', exchanges, loopDelayMs: { p50: ms(delay.percentile(50)), p99: ms(delay.percentile(99)), max: ms(delay.max) } };
}

async function handle(command: XiaozhiCommand): Promise<XiaozhiAnswer> {
  switch (command.type) {
    case 'connect':
      return connect(command);
    case 'talk':
      return talk(command);
    case 'count':
      return { type: 'count', open: devices.filter((device) => device.link.open).length, total: devices.length };
    case 'close':
      devices.forEach((device) => device.link.reset());
      return { type: 'close' };
  }
}

process.on('message', (message: XiaozhiCommand & { id: number }) => {
  handle(message).then(
    (answer) => send(answer, message.id),
    (error: Error) => send({ type: 'failed', error: error.stack ?? String(error) }, message.id),
  );
});
process.on('disconnect', () => process.exit(0));
send({ type: 'ready' });
