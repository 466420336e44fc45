import { WebSocket } from 'ws';
import { FrameSocket } from '../support/frame-socket';
import type { ServerProcess } from '../support/processes';
import { BENCH_TOKEN, gatewayServer } from '../support/servers';
import { emit, percentile, round, summarise } from '../support/stats';
import { withServer } from './tool-calls';

export interface GlobAbuseOptions {
  /** Devices online, each with a 62-character id (the longest an id may be). */
  devices: number;
  /** How long each phase (no abuse, abuse) measures a healthy client's pings. */
  durationMs: number;
  /** Between two pings of the healthy client. */
  pingEveryMs: number;
}

const AUTH = { Authorization: `Bearer ${BENCH_TOKEN}` };

/** Globs that made a backtracking regular expression run for seconds to minutes against a 62-character id; 16, the most a fan-out may name. */
const PATHOLOGICAL = Array.from({ length: 16 }, (_, index) => (index % 2 === 0 ? `${'a*'.repeat(20 + index)}b` : `${'*a'.repeat(63)}*b`));

async function onlineDevices(port: number, count: number): Promise<WebSocket[]> {
  const sockets: WebSocket[] = [];
  for (let index = 0; index < count; index++) {
    const id = `${'a'.repeat(54)}${String(index).padStart(8, '0')}`;
    const socket = new WebSocket(`ws://127.0.0.1:${port}/`, { headers: { ...AUTH, 'Device-Id': id }, perMessageDeflate: false });
    await new Promise<void>((resolve, reject) => {
      socket.once('message', () => resolve());
      socket.once('error', reject);
    });
    sockets.push(socket);
  }
  return sockets;
}

/** A healthy client's ping round trips, one every `everyMs`, until `until()`. */
async function pings(port: number, durationMs: number, everyMs: number): Promise<number[]> {
  const client = await FrameSocket.open(`ws://127.0.0.1:${port}/`, { headers: AUTH });
  await client.next(); // connected
  const samples: number[] = [];
  const end = performance.now() + durationMs;
  while (performance.now() < end) {
    const sent = performance.now();
    await client.exchange({ type: 'ping' });
    samples.push(performance.now() - sent);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  client.close();
  return samples;
}

/** A fan-out of one ordinary glob: the same requests at the same pace, without what the pathological globs cost. */
const ORDINARY = ['nobody-*'];

/** Fan-outs naming `globs`, one in flight at a time, until `stop`; each one's time. */
async function abuse(port: number, globs: string[], stop: () => boolean): Promise<number[]> {
  const times: number[] = [];
  while (!stop()) {
    const started = performance.now();
    const response = await fetch(`http://127.0.0.1:${port}/devices/say`, {
      method: 'POST',
      headers: { ...AUTH, 'Content-Type': 'application/json' },
      body: JSON.stringify({ devices: globs, text: 'Nobody.' }),
    });
    const body = (await response.json()) as { results?: unknown[] };
    if (response.status !== 200 || body.results?.length !== 0)
      throw new Error(`glob abuse: unexpected answer ${response.status} ${JSON.stringify(body).slice(0, 200)}`);
    times.push(performance.now() - started);
  }
  return times;
}

const view = (samples: number[]) => {
  const sorted = Float64Array.from(samples).sort();
  return { ...summarise(samples), max_ms: round(percentile(sorted, 1)) };
};

/** A healthy client's pings while a closed loop of fan-outs naming `globs` runs; and the fan-outs' times. */
async function underFanOuts(port: number, globs: string[], options: GlobAbuseOptions) {
  let done = false;
  const fanning = abuse(port, globs, () => done);
  const samples = await pings(port, options.durationMs, options.pingEveryMs);
  done = true;
  return { ping: view(samples), fanOuts: view(await fanning) };
}

async function measure(server: ServerProcess, options: GlobAbuseOptions) {
  const devices = await onlineDevices(server.port, options.devices);
  try {
    const quiet = view(await pings(server.port, options.durationMs, options.pingEveryMs));
    const ordinary = await underFanOuts(server.port, ORDINARY, options);
    const pathological = await underFanOuts(server.port, PATHOLOGICAL, options);
    return { quiet, ordinary, pathological };
  } finally {
    devices.forEach((socket) => socket.terminate());
  }
}

/**
 * A healthy client's ping while another token sends fan-outs of 16 globs made to backtrack
 * against as many 62-character ids as `options.devices`, beside the same pings with nobody
 * sending anything and with the same loop of fan-outs naming one ordinary glob, in the same run:
 * what the glob matcher and the fan-out's slices add to another client's wait.
 */
export async function benchGlobAbuse(options: GlobAbuseOptions): Promise<void> {
  const figures = await withServer(
    (port) => gatewayServer(port, { CLOUD_MAX_CONNECTIONS: String(options.devices + 100) }),
    (server) => measure(server, options),
  );
  emit({
    figure: 'fleet_glob_abuse',
    devices: options.devices,
    globs_per_fan_out: PATHOLOGICAL.length,
    ping_quiet: figures.quiet,
    // The baseline: the same closed loop of fan-out requests, each naming one ordinary glob.
    ping_under_ordinary_fan_outs: figures.ordinary.ping,
    ping_under_pathological_fan_outs: figures.pathological.ping,
    ordinary_fan_out: figures.ordinary.fanOuts,
    pathological_fan_out: figures.pathological.fanOuts,
    added_p99_ms_by_the_globs: round(figures.pathological.ping.p99_ms - figures.ordinary.ping.p99_ms),
  });
}
