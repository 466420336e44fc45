import { Registry } from 'prom-client';
import type { ToolDefinition, ToolOutcome } from '../core/tools/tool-definition';
import { ToolCallMetrics } from './tool-call-metrics';

const tool = (name: string, source: ToolDefinition['source']): ToolDefinition =>
  ({ name, source, description: '', inputSchema: { type: 'object' }, examples: [], timeoutMs: 1000, tags: [], handler: () => null }) as ToolDefinition;
const ok: ToolOutcome = { ok: true, value: 1, durationMs: 2 };
const timedOut: ToolOutcome = { ok: false, code: 'TOOL_TIMEOUT', message: 'late', durationMs: 1000 };

describe('ToolCallMetrics', () => {
  let registry: Registry;
  let metrics: ToolCallMetrics;

  beforeEach(() => {
    registry = new Registry();
    metrics = new ToolCallMetrics(registry);
  });

  type Sample = { value: number; labels: Record<string, string | number>; metricName?: string };
  const series = async (name: string) => ((await registry.getSingleMetric(name)!.get()) as unknown as { values: Sample[] }).values;

  it('counts by protocol, tool, source and outcome, and times each call', async () => {
    const calculator = tool('calculator', 'module');
    metrics.observe(calculator, 'mcp', ok, true);
    metrics.observe(calculator, 'mcp', ok, true);
    metrics.observe(calculator, 'llm', timedOut, true);
    metrics.observe(tool('get_weather', 'mcp:weather'), 'utcp', ok, true);
    expect(await series('gateway_tool_calls_total')).toEqual(
      expect.arrayContaining([
        { value: 2, labels: { protocol: 'mcp', tool: 'calculator', source: 'module', outcome: 'ok' } },
        { value: 1, labels: { protocol: 'llm', tool: 'calculator', source: 'module', outcome: 'TOOL_TIMEOUT' } },
        { value: 1, labels: { protocol: 'utcp', tool: 'get_weather', source: 'mcp:weather', outcome: 'ok' } },
      ]),
    );
    const counts = (await series('gateway_tool_call_duration_seconds')).filter(
      (sample) => (sample as { metricName?: string }).metricName === 'gateway_tool_call_duration_seconds_count',
    );
    expect(counts.find((sample) => sample.labels.protocol === 'llm')).toMatchObject({ value: 1 });
    expect(
      (await series('gateway_tool_call_duration_seconds')).find(
        (s) => (s as { metricName?: string }).metricName?.endsWith('_sum') && s.labels.protocol === 'llm',
      )?.value,
    ).toBe(1);
  });

  it('never labels with a name a client chose: unknown tools and device tools are "other"', async () => {
    metrics.observe(undefined, 'utcp', { ok: false, code: 'TOOL_NOT_FOUND', message: '', durationMs: 0 }, false);
    metrics.observe(tool('my_lamp', 'client:3f2a'), 'llm', ok, true);
    metrics.observe(tool('kitchen-7__my_lamp', 'device:kitchen-7'), 'mcp', ok, true);
    const labels = (await series('gateway_tool_calls_total')).map((sample) => sample.labels);
    expect(labels).toEqual([
      { protocol: 'utcp', tool: 'other', source: 'unknown', outcome: 'TOOL_NOT_FOUND' },
      { protocol: 'llm', tool: 'other', source: 'client', outcome: 'ok' },
      { protocol: 'mcp', tool: 'other', source: 'device', outcome: 'ok' },
    ]);
    expect(await registry.metrics()).not.toMatch(/my_lamp|3f2a|kitchen-7/);
  });

  it('counts a round trip only for a device tool whose callback went out', async () => {
    const lamp = tool('lamp', 'client:1');
    metrics.observe(lamp, 'llm', ok, true);
    metrics.observe(lamp, 'llm', timedOut, true);
    metrics.observe(lamp, 'llm', { ok: false, code: 'INVALID_TOOL_PARAMETERS', message: '', durationMs: 0 }, false);
    metrics.observe(tool('calculator', 'module'), 'llm', ok, true);
    expect(await series('gateway_client_tool_round_trips_total')).toEqual([
      { value: 1, labels: { outcome: 'ok' } },
      { value: 1, labels: { outcome: 'TOOL_TIMEOUT' } },
    ]);
  });
});
