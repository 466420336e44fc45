import { streamHugeFrame, upgradeRaw } from '../../test/support/raw-websocket';
import { round } from '../support/stats';
import type { GatewayState } from './soak-gateway';
import { MB, SoakGateway } from './soak-process';

export interface UnauthenticatedWaveOptions {
  /** Sockets per wave, half on `/utcp`, half on the MCP envelope, none with a token. */
  sockets: number;
  /** What each says its frame carries, and streams until it is cut off. */
  frameBytes: number;
  waves: number;
  /** The gateway's WS_UNAUTHENTICATED_MAX_BYTES. */
  boundBytes: number;
}

/**
 * Waves of sockets without a token on the routes that authenticate by message, each starting one
 * huge frame and streaming it as fast as the gateway reads: the gateway's RSS read every 50 ms
 * without collecting, and how many it closed with 1009. Before the bound the gateway buffered
 * each frame whole until the auth deadline (100 sockets of 16 MB: 139 MB -> 1.74 GB in 3 s).
 */
export async function soakUnauthenticatedWave(gateway: SoakGateway, options: UnauthenticatedWaveOptions): Promise<Record<string, unknown>> {
  const port = Number(new URL(gateway.ws('/')).port);
  const baseline = await gateway.state(true);
  const closedBefore = baseline.closes['1009'] ?? 0;
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
  for (let wave = 0; wave < options.waves; wave += 1) {
    const sockets = await Promise.all(Array.from({ length: options.sockets }, (_, index) => upgradeRaw(port, index % 2 === 0 ? '/utcp' : '/mcp')));
    await Promise.all(sockets.map((socket) => streamHugeFrame(socket, options.frameBytes)));
  }
  const after = await gateway.until((state) => state.connections === 0, 'every unauthenticated socket closed', 20_000);
  const seconds = (performance.now() - started) / 1000;
  sampling = false;
  await sampler;
  const collected = await gateway.state(true);
  return {
    figure: 'unauthenticated_wave',
    sockets_per_wave: options.sockets,
    waves: options.waves,
    frame_mb: round(options.frameBytes / MB, 1),
    bound_bytes: options.boundBytes,
    rss_before_mb: round(baseline.rss / MB, 1),
    peak_rss_growth_mb: round((peak.rss - baseline.rss) / MB, 1),
    heap_growth_after_gc_mb: round((collected.heapUsed - baseline.heapUsed) / MB, 2),
    closed_1009: (after.closes['1009'] ?? 0) - closedBefore,
    seconds: round(seconds, 2),
  };
}
