import { FrameSocket } from '../support/frame-socket';
import { round } from '../support/stats';
import type { GatewayState } from './soak-gateway';
import { AUTH, MB, SoakGateway } from './soak-process';

export interface SlowReaderOptions {
  /** Clients that stop reading at once. */
  readers: number;
  /** Requests each may send at most, whatever happens. */
  maxRequestsPerReader: number;
  timeLimitMs: number;
  /** The gateway's WS_MAX_BUFFERED_BYTES. */
  boundBytes: number;
}

const REQUEST = JSON.stringify({ type: 'utcp' });
const SETTLE_MS = 1000;
const pause = (socket: FrameSocket) => (socket.socket as unknown as { _socket: { pause(): void } })._socket.pause();

/**
 * Clients that stop reading while they ask the gateway for UTCP manuals (several KB each) as
 * fast as they can write: the gateway's memory while it answers them, read every 50 ms without
 * collecting (so the peak is what the process really held), and after a full collection once
 * they are gone; each must be closed with 1008 by then.
 */
export async function soakSlowReaders(gateway: SoakGateway, options: SlowReaderOptions): Promise<Record<string, unknown>> {
  const probe = await FrameSocket.open(gateway.ws('/utcp'), { headers: AUTH });
  const manualBytes = Buffer.byteLength(JSON.stringify(await probe.exchange({ type: 'utcp' })));
  probe.close();
  await gateway.until((state) => state.connections === 0, 'the probe gone');
  const baseline = await gateway.state(true);
  const closedBefore = baseline.closes['1008'] ?? 0;

  const readers = await Promise.all(Array.from({ length: options.readers }, () => FrameSocket.open(gateway.ws('/utcp'), { headers: AUTH })));
  readers.forEach(pause);
  let peak: GatewayState = baseline;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const now = await gateway.state();
      if (now.rss > peak.rss) peak = now;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  const started = performance.now();
  const deadline = Date.now() + options.timeLimitMs;
  let sent = 0;
  const closed = (state: GatewayState) => (state.closes['1008'] ?? 0) - closedBefore >= options.readers;
  for (let round = 0; round * 200 < options.maxRequestsPerReader && Date.now() < deadline; round += 1) {
    for (const reader of readers) {
      if (reader.socket.readyState !== reader.socket.OPEN) continue;
      for (let index = 0; index < 200; index += 1) reader.socket.send(REQUEST);
      sent += 200;
    }
    if (round % 10 === 9 && closed(await gateway.state())) break;
    await new Promise((resolve) => setImmediate(resolve));
  }
  const after = await gateway.until((state) => closed(state) && state.connections === 0, 'every slow reader closed', 20_000);
  const secondsToClose = (performance.now() - started) / 1000;
  sampling = false;
  await sampler;
  readers.forEach((reader) => reader.close());
  // The closed sockets' buffers are let go as their streams finish, shortly after the close.
  await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  const collected = await gateway.state(true);
  const peakGrowth = peak.rss - baseline.rss;
  return {
    figure: 'slow_reader',
    readers: options.readers,
    bound_bytes_per_reader: options.boundBytes,
    requests_sent: sent,
    answers_asked_mb: round((sent * manualBytes) / MB, 1),
    manual_bytes: manualBytes,
    rss_before_mb: round(baseline.rss / MB, 1),
    peak_rss_growth_mb: round(peakGrowth / MB, 1),
    peak_heap_growth_mb: round((peak.heapUsed - baseline.heapUsed) / MB, 1),
    heap_growth_after_gc_mb: round((collected.heapUsed - baseline.heapUsed) / MB, 2),
    closed_1008: (after.closes['1008'] ?? 0) - closedBefore,
    seconds_to_close: round(secondsToClose, 2),
  };
}
