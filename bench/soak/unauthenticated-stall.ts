import { fork } from 'child_process';
import { join } from 'path';
import { expectAnswer, FrameSocket } from '../support/frame-socket';
import { BENCH_BUILD, PROJECT_ROOT } from '../support/processes';
import { round, summarise } from '../support/stats';
import type { FloodCommand, FloodReport } from './huge-frame-flood-process';
import type { GatewayState } from './soak-gateway';
import { AUTH, MB, SoakGateway, within } from './soak-process';

export interface UnauthenticatedStallOptions {
  /** Sockets without a token kept open at once, all from one address. */
  sockets: number;
  /** What each says its frame carries. */
  frameBytes: number;
  /** How long pings are timed: with no abuse, per route under the flood, and under sockets that send nothing. */
  windowMs: number;
  /** Pause between one pong and the next ping: pings spread over the window sample it evenly, where back-to-back pings crowd into its quiet moments. */
  pingEveryMs: number;
  /** Routes that let a socket in before it authenticates, flooded one after the other. */
  routes: string[];
}

/** Pings over `pinger`, one at a time, `pauseMs` apart, until `done()`; each round trip in milliseconds. */
async function pingWhile(pinger: FrameSocket, pauseMs: number, done: () => boolean): Promise<number[]> {
  const samples: number[] = [];
  while (!done()) {
    const started = performance.now();
    const pong = await within(pinger.exchange({ type: 'ping' }), 30_000, 'ping');
    expectAnswer(pong.type === 'pong', pong, 'ping');
    samples.push(performance.now() - started);
    await new Promise((resolve) => setTimeout(resolve, pauseMs));
  }
  return samples;
}

/** Runs one flood in a process of its own (huge-frame-flood-process.ts), so that writing it does not slow the pinger; resolves with its report. */
function floodFor(command: FloodCommand): Promise<FloodReport> {
  const child = fork(join(BENCH_BUILD, 'soak', 'huge-frame-flood-process.js'), [], { cwd: PROJECT_ROOT, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('message', (report: FloodReport) => resolve(report));
    child.once('exit', (code) => code !== 0 && reject(new Error(`The flood process exited with ${code}`)));
    child.send(command);
  });
}

/**
 * What sockets without a token cost an authenticated client: `sockets` sockets from one address
 * on a route that authenticates by message, each announcing an unfinished huge frame and writing
 * it as fast as the gateway reads, a new socket as soon as one is closed, while an authenticated
 * LLM-gateway client pings, one ping at a time, a few milliseconds apart. Its round trips under
 * the flood, route by route, against a window without it and a window of as many sockets that
 * send nothing (what any client may cost: it is held until its auth deadline), in the same run;
 * the gateway's CPU in each window (its pings' included), what the flood added per socket, its
 * peak RSS and its 1009 closes.
 */
export async function soakUnauthenticatedStall(gateway: SoakGateway, options: UnauthenticatedStallOptions): Promise<Record<string, unknown>> {
  const port = Number(new URL(gateway.ws('/')).port);
  const pinger = await FrameSocket.open(gateway.ws('/'), { headers: AUTH });
  const cpuMicros = async () => (await gateway.server.usage()).cpuMicros;
  /** One window of pings, under a flood on `path` when there is one. */
  const window = async (flood?: { path: string; frameBytes: number }) => {
    const before = await gateway.state(true);
    const cpuBefore = await cpuMicros();
    let peak: GatewayState = before;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const now = await gateway.state();
        if (now.rss > peak.rss) peak = now;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    const flooding = flood && floodFor({ port, sockets: options.sockets, durationMs: options.windowMs, ...flood });
    const end = Date.now() + options.windowMs;
    const samples = await pingWhile(pinger, options.pingEveryMs, () => Date.now() >= end);
    const report = await flooding;
    const cpuMs = (await cpuMicros()) - cpuBefore;
    sampling = false;
    await sampler;
    const after = await gateway.until((state) => state.connections === 1, 'every unauthenticated socket closed', 30_000);
    const pings = summarise(samples);
    return {
      ping_p50_ms: pings.p50_ms,
      ping_p99_ms: pings.p99_ms,
      ping_max_ms: round(Math.max(...samples)),
      pings: pings.count,
      gateway_cpu_ms: round(cpuMs / 1000, 0),
      ...(report && {
        sockets_accepted: report.connections,
        upgrades_refused: report.refused,
        closed_1009: (after.closes['1009'] ?? 0) - (before.closes['1009'] ?? 0),
        peak_rss_growth_mb: round((peak.rss - before.rss) / MB, 1),
      }),
    };
  };
  try {
    await pinger.next();
    const baseline = await window();
    const added = (measured: Awaited<ReturnType<typeof window>>) => ({
      added_p99_ms: round(measured.ping_p99_ms - baseline.ping_p99_ms),
      added_cpu_us_per_socket: Math.round(((measured.gateway_cpu_ms - baseline.gateway_cpu_ms) * 1000) / Math.max(1, measured.sockets_accepted ?? 0)),
    });
    const flooded: Record<string, unknown> = {};
    for (const path of options.routes) {
      const measured = await window({ path, frameBytes: options.frameBytes });
      flooded[path] = { ...measured, ...added(measured) };
    }
    const silentWindow = await window({ path: options.routes[0], frameBytes: 0 });
    return {
      figure: 'unauthenticated_stall',
      sockets: options.sockets,
      from_addresses: 1,
      frame_mb: round(options.frameBytes / MB, 1),
      window_s: options.windowMs / 1000,
      ping_every_ms: options.pingEveryMs,
      baseline,
      flooded,
      silent: { route: options.routes[0], ...silentWindow, ...added(silentWindow) },
    };
  } finally {
    pinger.close();
  }
}
