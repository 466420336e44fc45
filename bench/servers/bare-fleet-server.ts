import { randomUUID } from 'crypto';
import { createServer, IncomingMessage, ServerResponse } from 'http';
import Redis from 'ioredis';
import { WebSocket, WebSocketServer } from 'ws';

/**
 * The fleet's baseline: the least a Node process must do to be one instance of a fleet, with
 * `ws`, Node's `http` and `ioredis` and no framework. Devices connect at `/` naming themselves
 * (`Device-Id`) and are greeted; agents call a device's tool over LiteMCP at
 * `/litemcp/<device>__<tool>` (the gateway's frames), and `POST /devices/<id>/say {"text"}` pushes
 * an `llm_response` and an `idle` to the device (`POST /devices/say {"devices", "text"}` to many:
 * one message per other instance). A device on another instance is reached as the
 * gateway reaches it: a message on that instance's inbox channel, its answer on ours. The
 * directory is a Redis hash of device -> instance with a channel of its changes, mirrored in
 * memory. The same bearer check at the upgrade and on HTTP; no validation, session, limits,
 * time limits, audit or metrics.
 */
const TOKEN = process.env.BENCH_TOKEN ?? '';
const port = Number(process.env.PORT);
const redisUrl = process.env.REDIS_URL || undefined;
const prefix = process.env.REDIS_KEY_PREFIX ?? 'bare-fleet:';
const INSTANCE = randomUUID();

type Message =
  | { kind: 'call'; id: string; from: string; device: string; tool: string; args: Record<string, unknown> }
  | { kind: 'say'; id: string; from: string; device: string; text: string }
  | { kind: 'say-each'; id: string; from: string; devices: string[]; text: string }
  | { kind: 'reply'; id: string; ok: boolean; value?: unknown; message?: string };

/** Device sockets held here. */
const local = new Map<string, WebSocket>();
/** Every device online: which instance holds it. */
const directory = new Map<string, string>();
/** Calls sent to a local device, by call_id, waiting for its `tool_result`. */
const onDevice = new Map<string, (frame: any) => void>();
/** Requests sent to another instance, by id, waiting for its reply. */
const awaited = new Map<string, (reply: Extract<Message, { kind: 'reply' }>) => void>();

const HASH = `${prefix}devices`;
const DIRECTORY = `${prefix}directory`;
const inbox = (instance: string) => `${prefix}inbox:${instance}`;
let redis: Redis | undefined;

const authorised = (request: IncomingMessage) => request.headers.authorization === `Bearer ${TOKEN}`;

function callDevice(device: string, tool: string, args: Record<string, unknown>): Promise<{ ok: boolean; value?: unknown; message?: string }> {
  const socket = local.get(device);
  if (socket) {
    const callId = randomUUID();
    socket.send(JSON.stringify({ type: 'tool_callback', call_id: callId, tool_name: tool, arguments: args }));
    return new Promise((resolve) => onDevice.set(callId, (frame) => resolve({ ok: frame.success === true, value: frame.result, message: frame.error })));
  }
  return remote(device, (id) => ({ kind: 'call', id, from: INSTANCE, device, tool, args }));
}

function say(device: string, text: string): Promise<{ ok: boolean; message?: string }> {
  const socket = local.get(device);
  if (socket) {
    speak(socket, `push-${randomUUID()}`, text);
    return Promise.resolve({ ok: true });
  }
  return remote(device, (id) => ({ kind: 'say', id, from: INSTANCE, device, text }));
}

/** One `say` to many devices: each instance holding some gets one message naming them all. */
async function sayToEach(devices: string[], text: string): Promise<void> {
  const elsewhere = new Map<string, string[]>();
  for (const device of devices) {
    const socket = local.get(device);
    if (socket) speak(socket, `push-${randomUUID()}`, text);
    else {
      const instance = directory.get(device);
      if (!instance) continue;
      const batch = elsewhere.get(instance);
      if (batch) batch.push(device);
      else elsewhere.set(instance, [device]);
    }
  }
  await Promise.all(
    [...elsewhere].map(([instance, batch]) => remote(batch[0], (id) => ({ kind: 'say-each', id, from: INSTANCE, devices: batch, text }), instance)),
  );
}

function speak(socket: WebSocket, turnId: string, text: string): void {
  socket.send(JSON.stringify({ type: 'llm_response', content: text, tool_calls: [], is_final: true, turn_id: turnId, origin: 'push' }));
  socket.send(JSON.stringify({ type: 'status', status: 'idle', turn_id: turnId, origin: 'push' }));
}

function remote(
  device: string,
  message: (id: string) => Message,
  instance = directory.get(device),
): Promise<{ ok: boolean; value?: unknown; message?: string }> {
  if (!instance || !redis) return Promise.resolve({ ok: false, message: `Device "${device}" is not connected` });
  const id = randomUUID();
  return new Promise((resolve) => {
    awaited.set(id, resolve);
    void redis!.publish(inbox(instance), JSON.stringify(message(id)));
  });
}

function receive(message: Message): void {
  if (message.kind === 'reply') {
    const settle = awaited.get(message.id);
    awaited.delete(message.id);
    settle?.(message);
    return;
  }
  if (message.kind === 'say-each') {
    for (const device of message.devices) {
      const socket = local.get(device);
      if (socket) speak(socket, `push-${randomUUID()}`, message.text);
    }
    void redis!.publish(inbox(message.from), JSON.stringify({ kind: 'reply', id: message.id, ok: true }));
    return;
  }
  const done = message.kind === 'call' ? callDevice(message.device, message.tool, message.args) : say(message.device, message.text);
  void done.then((outcome) => redis!.publish(inbox(message.from), JSON.stringify({ kind: 'reply', id: message.id, ...outcome })));
}

function join(device: string, socket: WebSocket): void {
  local.set(device, socket);
  directory.set(device, INSTANCE);
  void redis
    ?.pipeline()
    .hset(HASH, device, INSTANCE)
    .publish(DIRECTORY, JSON.stringify({ id: device, instance: INSTANCE }))
    .exec();
  socket.on('message', (data) => {
    const frame = JSON.parse(data.toString());
    if (frame.type === 'register_tools') socket.send(JSON.stringify({ type: 'tools_registered', count: frame.tools.length, tools: [] }));
    else if (frame.type === 'tool_result') {
      const settle = onDevice.get(frame.call_id);
      onDevice.delete(frame.call_id);
      settle?.(frame);
    }
  });
  socket.once('close', () => {
    if (local.get(device) !== socket) return;
    local.delete(device);
    directory.delete(device);
    void redis
      ?.pipeline()
      .hdel(HASH, device)
      .publish(DIRECTORY, JSON.stringify({ id: device }))
      .exec();
  });
  socket.send(JSON.stringify({ type: 'status', status: 'connected', session_id: randomUUID(), timestamp: new Date().toISOString() }));
}

/** LiteMCP calls of `<device>__<tool>`: the first positional argument is the tool's boolean `on`. */
function serveAgent(socket: WebSocket, name: string): void {
  const separator = name.indexOf('__');
  const device = name.slice(0, separator).replaceAll('.', ':');
  const tool = name.slice(separator + 2);
  socket.on('message', (data) => {
    const frame = JSON.parse(data.toString());
    const [on] = frame.data.arguments as string[];
    void callDevice(device, tool, { on: on === 'true' }).then((outcome) => {
      const content = outcome.ok ? [{ type: 'json', data: JSON.stringify(outcome.value) }] : [{ type: 'text', data: outcome.message ?? 'failed' }];
      socket.send(
        JSON.stringify({
          version: [1, 0, 0],
          id: frame.id,
          type: 'result',
          data: { version: [1, 0, 0], params: { on }, response: { content, error: !outcome.ok } },
        }),
      );
    });
  });
}

function answer(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}

const server = createServer((request, response) => {
  if (!authorised(request)) return answer(response, 401, { error: { code: 'UNAUTHORIZED' } });
  const path = new URL(request.url ?? '/', 'http://localhost').pathname;
  const parts = path.split('/').filter(Boolean);
  if (request.method === 'GET' && path === '/devices') return answer(response, 200, { devices: [...directory].map(([id, instance]) => ({ id, instance })) });
  if (request.method === 'GET' && parts[0] === 'devices' && parts.length === 2) {
    const instance = directory.get(parts[1]);
    return instance ? answer(response, 200, { id: parts[1], instance }) : answer(response, 404, { error: { code: 'DEVICE_OFFLINE' } });
  }
  if (request.method === 'POST' && path === '/devices/say') {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const { devices, text } = JSON.parse(Buffer.concat(chunks).toString()) as { devices: string[]; text: string };
      void sayToEach(devices, text).then(() =>
        answer(response, 200, { results: devices.map((device) => ({ device, delivered: 'spoken', turn_id: `push-${randomUUID()}` })) }),
      );
    });
    return;
  }
  if (request.method === 'POST' && parts[0] === 'devices' && parts[2] === 'say' && parts.length === 3) {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const { text } = JSON.parse(Buffer.concat(chunks).toString());
      void say(parts[1], text).then((outcome) =>
        outcome.ok
          ? answer(response, 200, { delivered: 'spoken', turn_id: `push-${randomUUID()}` })
          : answer(response, 404, { error: { code: 'DEVICE_OFFLINE', message: outcome.message } }),
      );
    });
    return;
  }
  answer(response, 404, { error: { code: 'NOT_FOUND' } });
});

const sockets = new WebSocketServer({ server, verifyClient: ({ req }: { req: IncomingMessage }) => authorised(req) });
sockets.on('connection', (socket, request) => {
  const path = new URL(request.url ?? '/', 'http://localhost').pathname;
  const device = request.headers['device-id'];
  if (path.startsWith('/litemcp/')) serveAgent(socket, decodeURIComponent(path.slice('/litemcp/'.length)));
  else if (typeof device === 'string') join(device, socket);
  else socket.send(JSON.stringify({ type: 'status', status: 'connected', session_id: randomUUID(), timestamp: new Date().toISOString() }));
});

async function main(): Promise<void> {
  if (redisUrl) {
    redis = new Redis(redisUrl);
    const subscriber = new Redis(redisUrl);
    subscriber.on('message', (channel: string, text: string) => {
      const message = JSON.parse(text);
      if (channel !== DIRECTORY) return receive(message as Message);
      if (message.instance === INSTANCE) return;
      if (message.instance) directory.set(message.id, message.instance);
      else if (!local.has(message.id)) directory.delete(message.id);
    });
    await subscriber.subscribe(DIRECTORY, inbox(INSTANCE));
    for (const [id, instance] of Object.entries(await redis.hgetall(HASH))) directory.set(id, instance);
  }
  server.listen(port, '127.0.0.1');
}

void main();

process.on('SIGTERM', () => {
  sockets.clients.forEach((client) => client.terminate());
  server.close(() => process.exit(0));
  setTimeout(() => process.exit(0), 2000).unref();
});
