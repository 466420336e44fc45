import type { Registry } from 'prom-client';
import type { ToolDefinition, ToolOutcome } from '../core/tools/tool-definition';
import { BoundCounter, BoundHistogram, CounterSeries, HistogramSeries } from './bound-families';
import { OTHER, sourceLabel, toolLabel } from './metric-labels';

/** Seconds: synchronous built-ins answer in microseconds, upstream and device tools in seconds. */
const TOOL_DURATION_BUCKETS = [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** One tool's series on one protocol, bound once: a call then costs two additions and no label lookup. */
interface ToolSeries {
  protocol: string;
  duration: HistogramSeries;
  /** By outcome (`ok` or a failure code), bound on first use. */
  outcomes: Partial<Record<string, CounterSeries>>;
  labels: [protocol: string, tool: string, source: string];
  roundTrip: boolean;
}

/**
 * Tool calls by protocol, tool, source and outcome, their durations, and the round trips of
 * device tools. Every catalogue tool gets its series bound on its first call and kept with it
 * (a WeakMap on its definition, so a withdrawn upstream tool takes them with it): the hot path
 * never builds a label key.
 */
export class ToolCallMetrics {
  private readonly calls: BoundCounter;
  private readonly durations: BoundHistogram;
  private readonly roundTrips: BoundCounter;
  private readonly roundTripDuration: HistogramSeries;
  private readonly byTool = new WeakMap<ToolDefinition, ToolSeries[]>();
  private readonly unknownTools: ToolSeries[] = [];

  constructor(registry: Registry) {
    this.calls = new BoundCounter(
      'gateway_tool_calls_total',
      'Tool calls by protocol, tool, source and outcome (ok, or the failure code)',
      ['protocol', 'tool', 'source', 'outcome'],
      registry,
    );
    this.durations = new BoundHistogram(
      'gateway_tool_call_duration_seconds',
      'Time from a tool call to its outcome',
      ['protocol', 'tool', 'source'],
      registry,
      TOOL_DURATION_BUCKETS,
    );
    this.roundTrips = new BoundCounter(
      'gateway_client_tool_round_trips_total',
      'Device tool calls sent as tool_callback, by outcome (ok, or the failure code)',
      ['outcome'],
      registry,
    );
    this.roundTripDuration = new BoundHistogram(
      'gateway_client_tool_round_trip_seconds',
      'Time from a tool_callback to its tool_result',
      [],
      registry,
      TOOL_DURATION_BUCKETS,
    ).bind();
  }

  /**
   * One finished call. `ran` is false for a call that never reached its handler (unknown tool,
   * invalid arguments), which for a device tool means no round trip happened.
   */
  observe(tool: ToolDefinition | undefined, protocol: string | undefined, outcome: ToolOutcome, ran: boolean): void {
    const series = this.seriesOf(tool, protocol ?? OTHER);
    const label = outcome.ok ? 'ok' : outcome.code;
    (series.outcomes[label] ??= this.calls.bind(...series.labels, label)).inc();
    const seconds = outcome.durationMs / 1000;
    series.duration.observe(seconds);
    if (series.roundTrip && ran) {
      this.roundTrips.bind(label).inc();
      this.roundTripDuration.observe(seconds);
    }
  }

  private seriesOf(tool: ToolDefinition | undefined, protocol: string): ToolSeries {
    let list: ToolSeries[] | undefined;
    if (tool === undefined) list = this.unknownTools;
    else if (!(list = this.byTool.get(tool))) this.byTool.set(tool, (list = []));
    // A tool is called over a handful of protocols at most: a short scan beats a keyed map.
    for (const series of list) if (series.protocol === protocol) return series;
    const labels: ToolSeries['labels'] = [protocol, toolLabel(tool), sourceLabel(tool)];
    const series: ToolSeries = { protocol, labels, duration: this.durations.bind(...labels), outcomes: {}, roundTrip: labels[2] === 'client' };
    list.push(series);
    return series;
  }
}
