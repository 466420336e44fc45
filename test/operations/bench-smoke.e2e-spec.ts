import { execFile } from 'child_process';
import { existsSync } from 'fs';
import { join } from 'path';
import { promisify } from 'util';
import { PROJECT_ROOT } from '../support/built';

const RUN_BENCH = join(PROJECT_ROOT, 'dist-bench', 'bench', 'run.js');

/**
 * `npm run bench --smoke`: every suite for a moment, so the scripts that produce BENCHMARKS.md
 * keep working. What it measures is not asserted (a timed test would fail on a busy machine);
 * that every figure comes out, whole, with its baseline and ratio, is.
 */
describe('the benchmarks, in smoke mode', () => {
  let figures: any[];

  beforeAll(async () => {
    if (!existsSync(RUN_BENCH)) throw new Error(`${RUN_BENCH} is missing: run "npm run build:bench" (npm test does it first)`);
    const { stdout } = await promisify(execFile)(process.execPath, [RUN_BENCH, '--smoke'], { cwd: PROJECT_ROOT, timeout: 420_000, maxBuffer: 1 << 24 });
    figures = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
  }, 430_000);

  const positive = expect.any(Number);
  const throughput = { calls_per_s: positive, p50_ms: positive, p99_ms: positive, server_cpu_us_per_call: positive };

  it('measures tool-call round trips on every protocol, with 1 and 50 connections, against the bare ws server', () => {
    const calls = figures.filter((figure) => figure.figure === 'tool_call_round_trip');
    expect(calls.map((figure) => `${figure.protocol}/${figure.connections}`).sort()).toEqual(
      ['litemcp', 'mcp-envelope', 'mcp-plain', 'mcp-2026', 'utcp'].flatMap((protocol) => [`${protocol}/1`, `${protocol}/50`]).sort(),
    );
    for (const figure of calls) {
      expect(figure).toMatchObject({ gateway: throughput, baseline: throughput, ratio: { calls_per_s: positive }, target: { met: expect.any(Boolean) } });
      expect(figure.gateway.calls_per_s).toBeGreaterThan(0);
      expect(figure.baseline.calls_per_s).toBeGreaterThan(0);
    }
  });

  it('measures the LLM turn overhead against direct completions, plain, streamed and with tools; plain and streamed against the bare turn server', () => {
    const turns = figures.filter((figure) => figure.figure === 'llm_turn_overhead');
    expect(turns.map((figure) => figure.turn).sort()).toEqual(['plain', 'server_and_client_tool', 'streamed']);
    for (const figure of turns) {
      expect(figure).toMatchObject({
        gateway: { p50_ms: positive, p99_ms: positive, cpu_us_per_turn: positive },
        direct: { p50_ms: positive, p99_ms: positive },
        overhead: { p50_ms: positive },
      });
      expect(figure.gateway.p50_ms).toBeGreaterThan(0);
      expect(figure.direct.p50_ms).toBeGreaterThan(0);
      expect(figure.gateway.cpu_us_per_turn).toBeGreaterThan(0);
    }
    for (const figure of turns.filter((turn) => turn.turn !== 'server_and_client_tool')) {
      expect(figure).toMatchObject({ baseline: { p50_ms: positive, cpu_us_per_turn: positive }, ratio: { cpu_to_baseline: positive } });
      expect(figure.baseline.cpu_us_per_turn).toBeGreaterThan(0);
    }
  });

  it("measures the time to the first sentence and to the whole answer at a real model's pace, beside the direct stream", () => {
    const [latency] = figures.filter((figure) => figure.figure === 'llm_turn_latency');
    expect(latency).toMatchObject({
      pace: { firstTokenMs: 300, tokensPerSecond: 40 },
      gateway: { first_sentence_p50_ms: positive, final_p50_ms: positive },
      direct: { first_sentence_p50_ms: positive, final_p50_ms: positive },
      first_sentence_after_direct: { p50_ms: positive },
    });
    expect(latency.gateway.first_sentence_p50_ms).toBeGreaterThanOrEqual(300);
    expect(latency.gateway.first_sentence_p50_ms).toBeLessThan(latency.gateway.final_p50_ms);
  });

  it('holds idle connections on the gateway and on the bare ws server, and says what each costs', () => {
    const [idle] = figures.filter((figure) => figure.figure === 'idle_connections');
    expect(idle).toMatchObject({
      connections: 200,
      gateway: { rss_bytes_per_connection: positive, connect_p50_ms: positive },
      baseline: { rss_bytes_per_connection: positive },
      ratio: { rss_per_connection: positive },
    });
  });

  it('calls the same MCP tool through supergateway, through the gateway, and through the gateway federating the same stdio server, with the same client', () => {
    const peer = figures.filter((figure) => figure.figure === 'peer_mcp_tools_call');
    expect(peer.map((figure) => figure.connections).sort()).toEqual([1, 50]);
    for (const figure of peer) {
      expect(figure).toMatchObject({
        gateway: throughput,
        gateway_upstream: { ...throughput, cpu_includes_stdio_child: expect.any(Boolean) },
        peer: { name: expect.stringContaining('supergateway'), calls_per_s: positive },
        upstream_ratio: { calls_per_s: positive, cpu_per_call: positive },
        ratio: { calls_per_s: positive },
      });
      expect(figure.peer.calls_per_s).toBeGreaterThan(0);
    }
  });

  it('measures tool calls with a tokens file (tool glob, protocols, rate-limit counter) against the same token in AUTH_TOKENS', () => {
    const [checks] = figures.filter((figure) => figure.figure === 'tokens_file_checks');
    expect(checks).toMatchObject({
      protocol: 'litemcp',
      connections: 50,
      without_file: throughput,
      with_file: throughput,
      ratio: { calls_per_s: positive, cpu_per_call: positive },
      end_to_end_cpu_overhead: expect.any(Number),
    });
    const [cost] = figures.filter((figure) => figure.figure === 'tokens_file_check_cost');
    expect(cost).toMatchObject({
      full_access_ns: positive,
      named_token_ns: positive,
      checks_ns: expect.any(Number),
      share_of_tool_call: expect.any(Number),
      target: { max_share: 0.05 },
    });
  });

  it('measures what a JWT access token costs: a verified one beside a static token, and one verified from scratch per algorithm', () => {
    const [cost] = figures.filter((figure) => figure.figure === 'jwt_check_cost');
    expect(cost).toMatchObject({
      static_token_ns: positive,
      verified_jwt_ns: positive,
      fresh_jwt_us: { RS256: positive, ES256: positive },
      catalogue_call_ns: positive,
      ratio: { verified_jwt_to_static: positive },
    });
  });

  it('measures the push fan-out both ways, one request for all devices and a request per device, beside the bare fleet', () => {
    const fanouts = figures.filter((figure) => figure.figure === 'fleet_push_fanout');
    expect(fanouts.map((figure) => figure.way).sort()).toEqual(['one_request', 'request_per_device']);
    for (const figure of fanouts)
      expect(figure).toMatchObject({ gateway: { fanout_s: positive }, baseline: { fanout_s: positive }, ratio: { fanout_s: positive } });
  });

  it("measures a healthy client's ping under fan-outs of globs made to backtrack, beside ordinary ones", () => {
    const [abuse] = figures.filter((figure) => figure.figure === 'fleet_glob_abuse');
    expect(abuse).toMatchObject({
      ping_quiet: { p99_ms: positive },
      ping_under_ordinary_fan_outs: { p99_ms: positive },
      ping_under_pathological_fan_outs: { p99_ms: positive },
      pathological_fan_out: { count: positive },
    });
  });

  it('measures what holding pushes for offline devices costs, in memory and in Redis', () => {
    const holding = figures.filter((figure) => figure.figure === 'fleet_holding_cost');
    expect(holding.map((figure) => figure.store).sort()).toEqual(['memory', 'redis']);
    for (const figure of holding) expect(figure).toMatchObject({ bytes_per_push: expect.any(Number), kb_per_device_at_bound: expect.any(Number) });
  });

  it('measures what two-way device audio costs with the chosen codec, resampler and VAD', () => {
    const [audio] = figures.filter((figure) => figure.figure === 'audio_two_way_cpu');
    expect(audio).toMatchObject({ cpu_us_per_audio_s: { uplink_decode_vad: positive, downlink_resample_encode: positive, two_way: positive } });
  });

  describe('fleet operations, each beside its baseline in the same run', () => {
    const operation = {
      count: positive,
      p50_ms: positive,
      p99_ms: positive,
      server_cpu_us_per_op: expect.any(Number),
      redis_commands_per_op: expect.any(Number),
      redis_scripts_per_op: expect.any(Number),
      redis_by_command_per_op: expect.any(Object),
    };
    const idle = { rounds: positive, redis_idle_commands_per_s: expect.any(Number) };
    const ratios = { p50: positive, p99: positive, cpu_per_op: expect.any(Number) };
    const one = (name: string) => {
      const found = figures.filter((figure) => figure.figure === name);
      expect(found).toHaveLength(1);
      return found[0];
    };

    it('measures an LLM turn whose budgets are checked in Redis against the same gateway without budgets', () => {
      const turn = one('fleet_ops_budget_turn');
      expect(turn).toMatchObject({ ...idle, turn: 'plain', gateway: operation, baseline: operation, budgets_add: expect.any(Object), ratio: ratios });
      // Both count usage in Redis (every turn reserves, charges and releases): scripts on both sides.
      expect(turn.gateway.redis_scripts_per_op).toBeGreaterThan(0);
      expect(turn.baseline.redis_scripts_per_op).toBeGreaterThan(0);
      expect(turn.llm_tokens_counted).toEqual({ gateway: positive, baseline: positive });
    });

    it("measures a push to an online device, whose receipt ends spoken, against the bare fleet server's push", () => {
      const push = one('fleet_ops_push_receipt');
      expect(push).toMatchObject({ ...idle, gateway: operation, baseline: operation, gateway_adds: expect.any(Object), ratio: ratios });
      expect(push.baseline_name).toContain('bare fleet server');
      expect(push.receipt).toMatchObject({ scripts_per_push: positive, evalsha_per_push: positive, last_state: 'spoken' });
      expect(push.receipt.last_history).toEqual(['queued', 'sent', 'spoken']);
      expect(push.gateway.redis_commands_per_op).toBeGreaterThan(0);
    });

    it("measures a xiaozhi device's boot with its own activated secret against the static device token", () => {
      const connect = one('fleet_ops_connect');
      expect(connect).toMatchObject({
        ...idle,
        gateway: { ...operation, name: expect.stringContaining('XIAOZHI_ACTIVATION=required') },
        baseline: { ...operation, name: expect.stringContaining('XIAOZHI_DEVICE_TOKEN') },
        activation_adds: expect.any(Object),
        ratio: ratios,
      });
      expect(connect.gateway.redis_commands_per_op).toBeGreaterThan(0);
    });
  });
});
