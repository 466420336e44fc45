import { Injectable } from '@nestjs/common';
import type { AssistantObserver, ModelRequestOutcome } from '../assistant/assistant-observer';
import type { CoreObserver } from '../core/observability/core-observer';
import type { BudgetObserver } from '../core/budgets/budget-observer';
import type { Meter } from '../core/budgets/budget-meters';
import type { ContextRequest, ContextRequestWatch, ContextRequestWatcher } from '../core/context/context-source';
import { Registry } from 'prom-client';
import { GatewayError } from '../core/errors/gateway-error';
import type { ToolDefinition, ToolOutcome } from '../core/tools/tool-definition';
import type { FrameObserver } from '../core/ws/frame-dispatcher';
import type { RefusalReason } from '../core/ws/refusal-reason';
import { BoundCounter, BoundHistogram, CounterSeries } from './bound-families';
import { processMetrics } from './process-metrics';
import { ToolCallMetrics } from './tool-call-metrics';

/** Seconds: a model's first token comes in tens of milliseconds to seconds, a whole answer in up to minutes. */
const MODEL_BUCKETS = [0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 20, 30, 60, 120];

/** How a turn ended. */
/** What became of one activation step: an owner's code (bound, wrong, refused by a limit, the id another's), a code handed out, a device's wrong HMAC. */
export type ActivationOutcome = 'bound' | 'wrong_code' | 'rate_limited' | 'taken' | 'code_issued' | 'hmac_refused';

export type TurnOutcome = 'answered' | 'cancelled' | 'failed';

/**
 * What a voice session counts: audio it dropped (not Opus, faster than real time, a frame that
 * breaks its framing, sent before `hello` or while nobody listens), an engine that failed, a turn
 * that ended in an error (the model's, a device tool's timeout: `gateway_errors_total` has its
 * code), an utterance cut at its maximum length, a barge-in, a device's MCP answers that made no
 * sense, and over MQTT + UDP what the MQTT server refused (credentials, topics, subscriptions,
 * sizes, non-JSON, admissions, connections over its caps, keep-alives it cannot honour), the
 * connections it dropped (keep-alive expired, replaced by a newer one of the same client id), and
 * the datagrams dropped (malformed, of no session, from another address, replayed or old, too far
 * ahead, not Opus once decrypted, and packets that could not be sent yet) or gaps seen.
 */
export type VoiceEvent =
  | 'audio_undecodable'
  | 'audio_over_budget'
  | 'audio_bad_frame'
  | 'audio_before_hello'
  | 'audio_not_listening'
  | 'utterance_max_length'
  | 'recognizer_failed'
  | 'synthesizer_failed'
  | 'turn_failed'
  | 'barge_in'
  | 'device_mcp_unknown_id'
  | 'device_mcp_endless_cursor'
  | 'device_mcp_bad_tool'
  | 'mqtt_bad_credentials'
  | 'mqtt_refused_topic'
  | 'mqtt_refused_subscribe'
  | 'mqtt_oversized'
  | 'mqtt_not_json'
  | 'mqtt_refused_admission'
  | 'mqtt_refused_connection'
  | 'mqtt_bad_keepalive'
  | 'mqtt_keepalive_expired'
  | 'mqtt_replaced'
  | 'udp_malformed'
  | 'udp_unknown_session'
  | 'udp_foreign_address'
  | 'udp_replayed'
  | 'udp_out_of_window'
  | 'udp_not_opus'
  | 'udp_gap'
  | 'udp_not_sent';

/** The code an error is counted under: its gateway code, or INTERNAL_ERROR for anything unexpected. */
const codeOf = (error: unknown): string => (error instanceof GatewayError ? error.code : 'INTERNAL_ERROR');

/**
 * The gateway's Prometheus metrics: one registry per app (tests boot several apps in one
 * process, and the global registry would mix them) for the families recorded as things happen,
 * reported with the process's own ({@link processMetrics}). Whatever can be read when Prometheus
 * scrapes (connections, sessions, upstreams) is read then, by {@link ScrapeTimeMetrics}, and
 * costs the hot paths nothing.
 *
 * The recording methods are what the shared core calls at its few points (the tool invoker,
 * the frame dispatcher, the upgrade router, the model client, the turn); every label value is
 * the gateway's own (protocols, catalogue tools, error codes), never a client's.
 */
@Injectable()
export class MetricsService implements CoreObserver, AssistantObserver, ContextRequestWatcher, BudgetObserver {
  readonly registry = new Registry();
  private readonly toolCalls = new ToolCallMetrics(this.registry);
  private readonly frames = this.counter('gateway_frames_total', 'WebSocket frames handled, by protocol and outcome (ok, error)', ['protocol', 'outcome']);
  private readonly errors = this.counter('gateway_errors_total', 'Errors answered to clients, by protocol and gateway error code', ['protocol', 'code']);
  private readonly refusals = this.counter(
    'gateway_refused_connections_total',
    'Upgrades and requests refused before a protocol saw them, by reason (cap, auth, origin, shutdown, other)',
    ['reason'],
  );
  private readonly turns = this.counter('gateway_turns_total', 'LLM-gateway turns, by outcome (answered, cancelled, failed)', ['outcome']);
  private readonly turnDurations = this.histogram('gateway_turn_duration_seconds', 'Time from a text_input to its final answer or error', []).bind();
  private readonly firstSentences = this.histogram(
    'gateway_turn_first_sentence_seconds',
    "Time from a text_input to the turn's first sentence (a streamed partial, else the answer)",
    [],
  ).bind();
  private readonly modelRequests = this.histogram(
    'gateway_llm_request_duration_seconds',
    'One model request, stream included, by outcome (ok, error, timeout, cancelled)',
    ['outcome'],
  );
  private readonly firstTokens = this.histogram('gateway_llm_first_token_seconds', "Time from a model request to the model's first token", []).bind();
  private readonly voiceEvents = this.counter(
    'gateway_voice_events_total',
    "What went wrong or out of the ordinary in voice sessions, by event (audio dropped and why, an engine's failure, a barge-in, a device's bad MCP answer)",
    ['protocol', 'event'],
  );
  private readonly budgetUsage = this.counter(
    'gateway_budget_usage_total',
    "What devices spent, by principal (the token's name, anonymous; never a device id) and meter: llm_tokens, tts_chars, stt_seconds",
    ['principal', 'meter'],
  );
  private readonly budgetRefusals = this.counter(
    'gateway_budget_refusals_total',
    "Turns, syntheses and recognitions refused because a budget (the device's or its principal's) was spent, by principal and meter",
    ['principal', 'meter'],
  );
  private readonly contextRequests = this.counter(
    'gateway_mcp_context_requests_total',
    'MCP requests for what upstreams offer besides tools, by kind (resource, prompt, completion) and outcome (ok, not_found, rate_limited, failed)',
    ['kind', 'outcome'],
  );

  private readonly activations = this.counter(
    'gateway_device_activations_total',
    'Device activation attempts and answers, by outcome (bound, wrong_code, rate_limited, taken, code_issued, hmac_refused): guessing shows as wrong_code and rate_limited',
    ['outcome'],
  );

  /**
   * The process's metrics, set up with the service: prom-client counts CPU from the moment its
   * collectors start, so set up at the first scrape they read about nothing (0 s) there.
   */
  private readonly processRegistry = processMetrics();

  /** The report Prometheus reads, in its text format: the process's metrics and this app's. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    const report = Registry.merge([this.processRegistry, this.registry]);
    return { contentType: report.contentType, body: await report.metrics() };
  }

  /** A finished tool call (`ran`: its handler was reached). */
  readonly toolCallEnded = (tool: ToolDefinition | undefined, protocol: string | undefined, outcome: ToolOutcome, ran: boolean): void =>
    this.toolCalls.observe(tool, protocol, outcome, ran);

  /** What a route's frame dispatcher reports to, its series bound once. */
  frameObserver(protocol: string): FrameObserver {
    const answered = this.frames.bind(protocol, 'ok');
    const failed = this.frames.bind(protocol, 'error');
    const byCode = new Map<string, CounterSeries>();
    return {
      answered: () => answered.inc(),
      failed: (error) => {
        failed.inc();
        const code = codeOf(error);
        let errors = byCode.get(code);
        if (!errors) byCode.set(code, (errors = this.errors.bind(protocol, code)));
        errors.inc();
      },
    };
  }

  /** An error answered outside the frame path (a failed turn), by its code. */
  errorAnswered(protocol: string, code: string): void {
    this.errors.bind(protocol, code).inc();
  }

  readonly refused = (reason: RefusalReason): void => this.refusals.bind(reason).inc();

  modelRequestEnded(outcome: ModelRequestOutcome, durationMs: number, firstTokenMs?: number): void {
    this.modelRequests.bind(outcome).observe(durationMs / 1000);
    if (firstTokenMs !== undefined) this.firstTokens.observe(firstTokenMs / 1000);
  }

  turnEnded(outcome: TurnOutcome, durationMs: number, firstSentenceMs?: number): void {
    this.turns.bind(outcome).inc();
    this.turnDurations.observe(durationMs / 1000);
    if (firstSentenceMs !== undefined) this.firstSentences.observe(firstSentenceMs / 1000);
  }

  /** One event of a voice session (see {@link VoiceEvent}). */
  voiceEvent(protocol: string, event: VoiceEvent): void {
    this.voiceEvents.bind(protocol, event).inc();
  }

  /** Usage a principal's devices spent (see `BudgetObserver`). */
  usageCharged(principal: string, meter: Meter, amount: number): void {
    this.budgetUsage.bind(principal, meter).inc(amount);
  }

  /** A spend refused over a spent budget. */
  budgetRefused(principal: string, meter: Meter): void {
    this.budgetRefusals.bind(principal, meter).inc();
  }

  /** One step of a device's activation (see `ActivationService`). */
  activation(outcome: ActivationOutcome): void {
    this.activations.bind(outcome).inc();
  }

  /** One resource read, prompt or completion (see `ContextCatalogueService`). */
  contextRequestStarted(request: ContextRequest): ContextRequestWatch {
    return { ended: (outcome) => this.contextRequests.bind(request.kind, outcome).inc() };
  }

  private counter(name: string, help: string, labelNames: string[]): BoundCounter {
    return new BoundCounter(name, help, labelNames, this.registry);
  }

  private histogram(name: string, help: string, labelNames: string[]): BoundHistogram {
    return new BoundHistogram(name, help, labelNames, this.registry, MODEL_BUCKETS);
  }
}
