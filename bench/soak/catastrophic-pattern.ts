import { ChatRequest, lastUserText, ScriptedLlm, ScriptedReply, toolResults } from '../../test/support/scripted-llm';
import { expectAnswer, FrameSocket } from '../support/frame-socket';
import { round, summarise } from '../support/stats';
import { AUTH, SoakGateway, within } from './soak-process';

export interface CatastrophicPatternOptions {
  /** How long pings are timed, once without the pattern and once with it. */
  windowMs: number;
  /** `a`s before the `!`: 27 stalled every client for 5.7 s on the native engine. */
  length: number;
  /** Lengths the native engine is timed at in this process, for comparison (each one more doubles its time). */
  nativeLengths: number[];
}

const PATTERN = '^(a+)+$';
const schemaWith = (pattern?: string) => ({
  type: 'object',
  properties: { code: { type: 'string', ...(pattern && { pattern }) } },
  required: ['code'],
});

/**
 * The scripted model: "unlock with the evil code" calls `unlock` (whose schema has the pattern),
 * "unlock plainly" calls `unlock_plain` (the same schema without it) with the same code; once
 * the request carries the tool's result, it answers with that result.
 */
function script(code: string) {
  return (request: ChatRequest): ScriptedReply => {
    const results = toolResults(request);
    if (Object.keys(results).length > 0) return { text: JSON.stringify(Object.values(results)[0]) };
    const name = lastUserText(request).includes('plainly') ? 'unlock_plain' : 'unlock';
    return { toolCalls: [{ name, arguments: { code } }] };
  };
}

/** Pings over `pinger`, one at a time, until `done()`; each round trip in milliseconds. */
async function pingWhile(pinger: FrameSocket, done: () => boolean): Promise<number[]> {
  const samples: number[] = [];
  while (!done()) {
    const started = performance.now();
    const pong = await within(pinger.exchange({ type: 'ping' }), 30_000, 'ping');
    expectAnswer(pong.type === 'pong', pong, 'ping');
    samples.push(performance.now() - started);
  }
  return samples;
}

/** Turns the device holds back to back until `done()`, answering the tool's callbacks; each answer checked by `check`. */
async function turnsWhile(device: FrameSocket, text: string, done: () => boolean, check: (answer: string) => boolean): Promise<number> {
  let turns = 0;
  while (!done()) {
    device.send({ type: 'text_input', text });
    let frame = await within(device.next(), 30_000, 'a turn');
    while (frame.type !== 'llm_response') {
      if (frame.type === 'tool_callback') device.send({ type: 'tool_result', call_id: frame.call_id, success: true, result: 'unlocked' });
      frame = await within(device.next(), 30_000, 'a turn');
    }
    expectAnswer(check(frame.content), frame, text);
    await within(device.next(), 30_000, 'idle');
    turns += 1;
  }
  return turns;
}

/**
 * What `^(a+)+$` costs the native RegExp engine (this process's, with the `u` flag, as ajv
 * compiles patterns) on `n` a's and a `!`, in ms: the second of two runs, the first compiling it.
 */
function nativeMs(length: number): number {
  const subject = `${'a'.repeat(length)}!`;
  const pattern = new RegExp(PATTERN, 'u');
  pattern.test(subject);
  const started = performance.now();
  pattern.test(subject);
  return performance.now() - started;
}

/**
 * A device tool whose schema has `^(a+)+$`, called by the model with 27 `a`s and a `!`, turn
 * after turn, while another client pings: its ping round trips against a window where the same
 * turns call the same tool without the pattern. The pattern runs on RE2JS (linear time), so the
 * added latency must stay within 50 ms; the native engine's cost is shown for comparison.
 */
export async function soakCatastrophicPattern(gateway: SoakGateway, llm: ScriptedLlm, options: CatastrophicPatternOptions): Promise<Record<string, unknown>> {
  const code = `${'a'.repeat(options.length)}!`;
  llm.reset();
  // Two model calls a turn, turns of a few milliseconds at the least, two windows: more than enough.
  llm.reply(...Array(options.windowMs * 4).fill(script(code)));
  const device = await FrameSocket.open(gateway.ws('/'), { headers: AUTH });
  const pinger = await FrameSocket.open(gateway.ws('/'), { headers: AUTH });
  try {
    await Promise.all([device.next(), pinger.next()]);
    const registered = await device.exchange({
      type: 'register_tools',
      tools: [
        { name: 'unlock', description: 'Unlocks the door with a code', parameters: schemaWith(PATTERN) },
        { name: 'unlock_plain', description: 'Unlocks the door with a code', parameters: schemaWith() },
      ],
    });
    expectAnswer(registered.count === 2, registered, 'register_tools');

    const window = async (text: string, check: (answer: string) => boolean) => {
      const end = Date.now() + options.windowMs;
      const done = () => Date.now() >= end;
      const [turns, pings] = await Promise.all([turnsWhile(device, text, done, check), pingWhile(pinger, done)]);
      return { turns, pings: summarise(pings), max_ms: round(Math.max(...pings)) };
    };
    const baseline = await window('unlock plainly', () => true);
    const withPattern = await window('unlock with the evil code', (answer) => /must match pattern/.test(answer));
    const native = options.nativeLengths.map((length) => ({ length, ms: round(nativeMs(length), 1) }));
    const last = native.at(-1)!;
    const addedMax = round(withPattern.max_ms - baseline.max_ms);
    return {
      figure: 'catastrophic_pattern',
      pattern: PATTERN,
      input: `'a' x ${options.length} + '!'`,
      window_s: options.windowMs / 1000,
      baseline: {
        turns: baseline.turns,
        ping_p50_ms: baseline.pings.p50_ms,
        ping_p99_ms: baseline.pings.p99_ms,
        ping_max_ms: baseline.max_ms,
        pings: baseline.pings.count,
      },
      with_pattern: {
        turns: withPattern.turns,
        ping_p50_ms: withPattern.pings.p50_ms,
        ping_p99_ms: withPattern.pings.p99_ms,
        ping_max_ms: withPattern.max_ms,
        pings: withPattern.pings.count,
      },
      added_ms: { p50: round(withPattern.pings.p50_ms - baseline.pings.p50_ms), p99: round(withPattern.pings.p99_ms - baseline.pings.p99_ms), max: addedMax },
      native_engine: { timed: native, estimated_ms_at_input_length: Math.round(last.ms * 2 ** (options.length - last.length)) },
      target: { max_added_ms: 50, met: addedMax <= 50 },
    };
  } finally {
    device.close();
    pinger.close();
    llm.reset();
  }
}
