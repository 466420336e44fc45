import { WebSocket } from 'ws';
import type { SwarmAnswer, SwarmCommand } from './device-swarm';

/**
 * A client process holding many devices' sockets (bench/support/device-swarm.ts starts it and
 * drives it over IPC): a process has a limited number of file descriptors, and the bench's own
 * event loop should not be the one reading thousands of pushes. Times are read from the
 * monotonic clock that every process of the machine shares (`process.hrtime`, CLOCK_MONOTONIC on
 * Linux), so the parent can compare them with its own.
 */
const nowMs = () => Number(process.hrtime.bigint()) / 1e6;

/** The device sockets, by index in the order they were asked for. */
const devices: WebSocket[] = [];
/** When each device received its push (monotonic ms), or -1. */
let arrivals: number[] = [];
let arrived = 0;
/** A push that was not the expected frame: reported, not timed. */
let wrongPush: string | undefined;
let pushText = '';
let waiter: { expect: number; done(): void } | undefined;

/** Answers the command numbered `id` (none for `ready`, sent once at start). */
function send(answer: SwarmAnswer | { type: 'ready' }, id?: number): void {
  process.send?.({ ...answer, id });
}

/** What a device does with a frame after its greeting: notes the arrival of a push, ignores the turn's `idle`. */
function onFrame(index: number, data: Buffer): void {
  const frame = JSON.parse(data.toString());
  if (frame.type !== 'llm_response') return;
  if (frame.origin !== 'push' || frame.is_final !== true || frame.content !== pushText) {
    wrongPush ??= JSON.stringify(frame).slice(0, 500);
    return;
  }
  if (arrivals[index] !== -1) return;
  arrivals[index] = nowMs();
  arrived += 1;
  if (waiter && arrived >= waiter.expect) waiter.done();
}

/** Opens one device's socket; resolves with the milliseconds until its greeting (`status connected`). */
function openOne(url: string, index: number, headers: Record<string, string>, localAddress: string | undefined): Promise<number> {
  const start = nowMs();
  const socket = new WebSocket(url, { headers, perMessageDeflate: false, ...(localAddress && { localAddress }) });
  devices[index] = socket;
  arrivals[index] = -1;
  return new Promise((resolve, reject) => {
    socket.once('message', (data: Buffer) => {
      const frame = JSON.parse(data.toString());
      if (frame.type !== 'status' || frame.status !== 'connected') return reject(new Error(`Unexpected first frame: ${data.toString().slice(0, 300)}`));
      socket.on('message', (next: Buffer) => onFrame(index, next));
      resolve(nowMs() - start);
    });
    socket.once('error', reject);
    socket.once('unexpected-response', (_request, response) => reject(new Error(`${url} refused the upgrade: HTTP ${response.statusCode}`)));
    socket.once('close', (code) => reject(new Error(`The connection closed (${code}) before its greeting`)));
  });
}

/**
 * Closes a device's socket with a TCP reset: a client that closes first would leave its side in
 * TIME_WAIT for a minute, and tens of thousands of those exhaust the ephemeral ports of the
 * source address for everything else on the machine.
 */
function reset(socket: WebSocket): void {
  const tcp = (socket as unknown as { _socket?: { resetAndDestroy?: () => void } })._socket;
  if (tcp?.resetAndDestroy) tcp.resetAndDestroy();
  else socket.terminate();
}

async function connect(command: Extract<SwarmCommand, { type: 'connect' }>): Promise<SwarmAnswer> {
  const { url, ids, token, idHeader, localAddresses, perAddress, firstIndex, concurrency, timeoutMs } = command;
  const latenciesMs: number[] = [];
  const base = devices.length;
  let next = 0;
  let failure: Error | undefined;
  const worker = async () => {
    while (next < ids.length && !failure) {
      const index = next++;
      const headers: Record<string, string> = { Authorization: `Bearer ${token}` };
      if (idHeader) headers['Device-Id'] = ids[index];
      const address = localAddresses.length > 0 ? localAddresses[Math.floor((firstIndex + index) / perAddress) % localAddresses.length] : undefined;
      try {
        latenciesMs.push(await openOne(url, base + index, headers, address));
      } catch (error) {
        failure ??= error as Error;
      }
    }
  };
  const start = nowMs();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
  await Promise.race([Promise.all(Array.from({ length: Math.min(concurrency, ids.length) }, worker)), timeout]);
  clearTimeout(timer);
  const end = nowMs();
  if (!failure && latenciesMs.length < ids.length)
    failure = new Error(`only ${latenciesMs.length} of ${ids.length} devices connected within ${timeoutMs / 1000} s`);
  return { type: 'connect', startMs: start, endMs: end, latenciesMs, error: failure && `${failure.message} (after ${latenciesMs.length} connected)` };
}

function collect(expect: number, timeoutMs: number): Promise<SwarmAnswer> {
  const answer = (): SwarmAnswer => ({ type: 'collect', arrivals, arrived, wrongPush });
  if (arrived >= expect) return Promise.resolve(answer());
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      waiter = undefined;
      resolve(answer());
    }, timeoutMs);
    waiter = {
      expect,
      done: () => {
        clearTimeout(timer);
        waiter = undefined;
        resolve(answer());
      },
    };
  });
}

async function handle(command: SwarmCommand): Promise<SwarmAnswer> {
  switch (command.type) {
    case 'connect':
      return connect(command);
    case 'expect':
      pushText = command.text;
      arrivals = devices.map(() => -1);
      arrived = 0;
      wrongPush = undefined;
      return { type: 'expect' };
    case 'collect':
      return collect(command.expect, command.timeoutMs);
    case 'count':
      return { type: 'count', open: devices.filter((socket) => socket.readyState === WebSocket.OPEN).length, total: devices.length };
    case 'close':
      devices.forEach(reset);
      return { type: 'close' };
  }
}

process.on('message', (message: SwarmCommand & { id: number }) => {
  handle(message).then(
    (answer) => send(answer, message.id),
    (error: Error) => send({ type: 'failed', error: error.stack ?? String(error) }, message.id),
  );
});
process.on('disconnect', () => process.exit(0));
send({ type: 'ready' });
