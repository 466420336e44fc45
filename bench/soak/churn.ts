import type { ScriptedLlm } from '../../test/support/scripted-llm';
import { expectAnswer, FrameSocket } from '../support/frame-socket';
import { round } from '../support/stats';
import { AUTH, MB, SoakGateway, within } from './soak-process';

export interface ChurnOptions {
  /** Cycles before the heap is first read: compiled code, pools and caches are made once. */
  warmupCycles: number;
  /** Cycles between the two readings of the heap. */
  cycles: number;
  /** Cycles with the timer census on, after the heap readings (counting costs memory of its own). */
  censusCycles: number;
  /** Devices at once. */
  workers: number;
  /** Longest the measured cycles may take, whatever their count. */
  timeLimitMs: number;
  /**
   * What the gateway does with released sessions: keeps every one for the hour
   * (`CLOUD_SESSION_MAX_PER_PRINCIPAL=0`), keeps its default per-token cap of them (`capped`), or
   * forgets them within seconds (`expiring`, a short CLOUD_SESSION_TIMEOUT: the heap is read once
   * they are swept, so it shows what else the devices left). The gateway must be started with
   * the matching settings ({@link CHURN_SETTINGS}).
   */
  sessions: ChurnSessions;
}

export type ChurnSessions = 'kept' | 'capped' | 'expiring';

/** The gateway settings each {@link ChurnSessions} needs. */
export const CHURN_SETTINGS: Record<ChurnSessions, Record<string, string>> = {
  kept: { CLOUD_SESSION_MAX_PER_PRINCIPAL: '0' },
  capped: {},
  // Sessions forgotten two seconds after their connection is gone, swept every second.
  expiring: { CLOUD_SESSION_TIMEOUT: '2', CLOUD_SESSION_CLEANUP_INTERVAL: '1' },
};

/** The device tool every cycle registers, and the call the model makes to it. */
const DEVICE_TOOL = {
  name: 'get_battery',
  description: 'Battery level of the device, in percent',
  parameters: { type: 'object', properties: { unit: { type: 'string', enum: ['percent'] } }, additionalProperties: false },
};
const TOOL_CALL = { toolCalls: [{ name: 'get_battery', arguments: { unit: 'percent' } }] };
const CYCLE_TIMEOUT_MS = 15_000;

/**
 * One device: connects, registers its tool, asks; the model calls the tool, the gateway sends
 * `tool_callback`, and the device goes away without answering: every other one with a close
 * frame, the rest cut off.
 */
async function cycle(gateway: SoakGateway, index: number): Promise<void> {
  const device = await FrameSocket.open(gateway.ws('/'), { headers: AUTH });
  try {
    const connected = await device.next();
    expectAnswer(connected.type === 'status' && connected.status === 'connected', connected, 'connecting');
    const registered = await device.exchange({ type: 'register_tools', tools: [DEVICE_TOOL] });
    expectAnswer(registered.type === 'tools_registered' && registered.count === 1, registered, 'register_tools');
    device.send({ type: 'text_input', text: `What is the battery level? (${index})` });
    for (let frame = await device.next(); frame.type !== 'tool_callback'; frame = await device.next()) {
      expectAnswer(frame.type === 'status', frame, 'a turn calling the device tool');
    }
  } finally {
    if (index % 2 === 0) device.close();
    else device.socket.close();
  }
}

/** `count` cycles, `workers` at a time, within `timeLimitMs`; then waits for the gateway to let every device go. Returns the cycles run. */
async function churn(gateway: SoakGateway, llm: ScriptedLlm, count: number, workers: number, timeLimitMs: number): Promise<number> {
  llm.reset();
  llm.reply(...Array(count).fill(TOOL_CALL));
  const deadline = Date.now() + timeLimitMs;
  let next = 0;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (next < count && Date.now() < deadline) {
        const index = next++;
        await within(cycle(gateway, index), CYCLE_TIMEOUT_MS, `cycle ${index}`);
      }
    }),
  );
  await gateway.until((state) => state.connections === 0 && state.callsRunning === 0, 'every device gone and its call ended');
  llm.reset();
  return next;
}

/**
 * Connect/disconnect churn with device tools registered and their calls pending: the heap after
 * full garbage collections before and after `cycles` devices, and what is left once they are
 * gone (connections, device tools, calls, sessions; timers, counted over a round of their own).
 * Released sessions are kept, resumable, for CLOUD_SESSION_TIMEOUT (the spec's rule), so they
 * are part of the growth, unless they expire (see {@link ChurnOptions.sessions}).
 */
export async function soakChurn(gateway: SoakGateway, llm: ScriptedLlm, options: ChurnOptions): Promise<Record<string, unknown>> {
  const swept = () => (options.sessions === 'expiring' ? gateway.until((state) => state.storedSessions === 0, 'released sessions swept') : undefined);
  await churn(gateway, llm, options.warmupCycles, options.workers, options.timeLimitMs);
  await swept();
  const before = await gateway.state(true);
  const started = performance.now();
  const cycles = await churn(gateway, llm, options.cycles, options.workers, options.timeLimitMs);
  const seconds = (performance.now() - started) / 1000;
  await swept();
  const after = await gateway.state(true);
  await gateway.census(true);
  await churn(gateway, llm, options.censusCycles, options.workers, options.timeLimitMs);
  // Timers cleared just now report their end asynchronously.
  await new Promise((resolve) => setTimeout(resolve, 200));
  const census = await gateway.state();
  await gateway.census(false);
  const growth = (after.heapUsed - before.heapUsed) / before.heapUsed;
  return {
    figure: 'churn',
    sessions: options.sessions,
    cycles,
    workers: options.workers,
    seconds: round(seconds, 1),
    cycles_per_s: round(cycles / seconds, 1),
    heap_before_mb: round(before.heapUsed / MB, 2),
    heap_after_mb: round(after.heapUsed / MB, 2),
    heap_growth_pct: round(growth * 100, 2),
    heap_growth_bytes_per_cycle: Math.round((after.heapUsed - before.heapUsed) / cycles),
    rss_before_mb: round(before.rss / MB, 1),
    rss_after_mb: round(after.rss / MB, 1),
    left: {
      connections: after.connections,
      attached_sessions: after.attachedSessions,
      device_tools: after.clientTools,
      calls_running: after.callsRunning,
      timers: census.liveTimers,
      timer_census_cycles: options.censusCycles,
      stored_sessions: after.storedSessions,
    },
    target: { max_heap_growth_pct: 10, met: growth < 0.1 },
  };
}
