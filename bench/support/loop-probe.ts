import { monitorEventLoopDelay, performance } from 'perf_hooks';

/**
 * Preloaded into a server the voice figures start (`--require`, beside the usage probe): answers
 * `{type: "loop"}` on the IPC channel with its event loop's utilization so far (busy and idle
 * milliseconds, `performance.eventLoopUtilization()`) and how late a 20 ms timer fired since the
 * last question (`monitorEventLoopDelay`), then starts the delays afresh. What it costs the server:
 * 50 timer wakeups a second.
 */
const RESOLUTION_MS = 20;
const delays = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
delays.enable();

process.on('message', (message: { type?: string; id?: number }) => {
  if (message?.type !== 'loop') return;
  const { active, idle } = performance.eventLoopUtilization();
  // The histogram holds the timer's whole intervals: its lateness is what exceeds the resolution.
  const ms = (ns: number) => Math.max(0, Math.round(ns / 1e4) / 100 - RESOLUTION_MS);
  process.send?.({
    type: 'loop',
    id: message.id,
    activeMs: active,
    idleMs: idle,
    delayMs: { p50: ms(delays.percentile(50)), p99: ms(delays.percentile(99)), max: ms(delays.max) },
  });
  delays.reset();
});
process.channel?.unref();
