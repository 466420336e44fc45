import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { WebSocketClientTransport } from '@modelcontextprotocol/sdk/client/websocket.js';
import { readFileSync } from 'fs';
import { load } from 'js-yaml';
import parsePrometheusTextFormat, { ParsedFamily } from 'parse-prometheus-text-format';
import { join } from 'path';
import { MetricsService } from '../../src/metrics/metrics.service';
import { PROJECT_ROOT } from '../support/built';
import { RunningGateway, startGateway } from '../support/gateway';
import { LiteMcpClient } from '../support/litemcp-client';
import { LlmClient, LlmStack, startLlmStack } from '../support/llm-stack';
import { freePort } from '../support/ports';
import { toolResults } from '../support/scripted-llm';
import { provideGlobalWebSocket } from '../support/sdk-websocket';
import { TestSocket, UpgradeRefused } from '../support/test-socket';
import { Utcp01Client } from '../support/utcp01-client';

provideGlobalWebSocket();

const TOKEN = 'metrics-e2e-token';
const auth = { Authorization: `Bearer ${TOKEN}` };
/** A device tool's name: the device chose it, so it must never become a label. */
const DEVICE_TOOL = 'lamp_switch_7f3a';

/** The families of a scrape, read by a Prometheus text-format parser, by name. */
function parse(text: string): Map<string, ParsedFamily> {
  return new Map(parsePrometheusTextFormat(text).map((family) => [family.name, family]));
}

/** The sample of `family` whose labels include `labels`; its value (a counter or gauge) or count (a histogram). */
function valueOf(families: Map<string, ParsedFamily>, name: string, labels: Record<string, string> = {}): number | undefined {
  const family = families.get(name);
  const sample = family?.metrics.find((candidate) => Object.entries(labels).every(([key, value]) => candidate.labels?.[key] === value));
  if (!sample) return undefined;
  return Number(sample.value ?? sample.count);
}

/**
 * The count of a labelled histogram's series, from the app's registry: the text parser folds the
 * series of a labelled histogram into one (it keeps their buckets, not their counts).
 */
async function histogramCount(gateway: RunningGateway, name: string, labels: Record<string, string>): Promise<number | undefined> {
  const family = await gateway.app.get(MetricsService).registry.getSingleMetric(name)!.get();
  const { values } = family as unknown as { values: { value: number; labels: Record<string, string>; metricName?: string }[] };
  const sample = values.find(
    (candidate) =>
      (candidate as { metricName?: string }).metricName === `${name}_count` && Object.entries(labels).every(([key, value]) => candidate.labels[key] === value),
  );
  return sample?.value;
}

async function scrape(url: string, headers: Record<string, string> = auth): Promise<Map<string, ParsedFamily>> {
  const response = await fetch(url, { headers });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parse(await response.text());
}

describe('Prometheus metrics', () => {
  describe('after traffic on every protocol, auth on', () => {
    let stack: LlmStack;
    let device: LlmClient;
    let text: string;
    let families: Map<string, ParsedFamily>;

    beforeAll(async () => {
      stack = await startLlmStack({ AUTH_TOKENS: TOKEN });
      const { gateway, llm } = stack;

      // LLM gateway: a turn with a server tool, then one with a device tool.
      device = await stack.connect('/', auth);
      device.send({
        type: 'register_tools',
        tools: [{ name: DEVICE_TOOL, description: 'Switches the lamp', parameters: { type: 'object', properties: {} } }],
      });
      await device.until('tools_registered');
      llm.reply(
        { toolCalls: [{ id: 'c1', name: 'calculator', arguments: { a: 6, b: 7, operation: 'multiply' } }] },
        (request) => ({ text: `The answer is ${toolResults(request).c1}.` }),
        { toolCalls: [{ id: 'd1', name: DEVICE_TOOL, arguments: {} }] },
        { text: 'The lamp is on.' },
      );
      device.send({ type: 'text_input', text: '6 times 7?' });
      await device.until('status', 'idle');
      device.send({ type: 'text_input', text: 'Lamp on, please' });
      const { call_id } = (await device.until('tool_callback')).pop();
      device.send({ type: 'tool_result', call_id, result: { on: true }, success: true, error: null });
      await device.until('status', 'idle');
      // A frame that is not JSON: an error on the frame path.
      device.send('{"type": ');
      await device.until('error');

      // MCP: tools/call through the official SDK over plain WebSocket.
      const mcp = new Client({ name: 'metrics-e2e', version: '1.0.0' });
      await mcp.connect(new WebSocketClientTransport(new URL(gateway.ws(`/mcp?token=${TOKEN}`))));
      await expect(mcp.callTool({ name: 'calculator', arguments: { a: 1, b: 2 } })).resolves.toMatchObject({ content: [{ type: 'text', text: '3' }] });
      await mcp.close();

      // LiteMCP: one call on the tool's endpoint.
      const liteMcp = await LiteMcpClient.connect(gateway.ws('/litemcp/calculator'), TOKEN);
      await expect(liteMcp.call('calculator', ['2', '3', 'add'])).resolves.toMatchObject({ response: { error: false, content: [{ data: '5' }] } });
      liteMcp.close();

      // UTCP: a call that fails in the tool, and one of a name the catalogue does not have.
      const utcp = await Utcp01Client.connect(gateway.ws('/utcp'), { token: TOKEN, via: 'header' });
      await expect(utcp.call('calculator', { a: 1, b: 0, operation: 'divide' })).rejects.toThrow(/Division by zero/);
      await expect(utcp.call('made_up_tool_name', {})).rejects.toThrow(/TOOL_NOT_FOUND/);
      await utcp.close();

      // A refused upgrade: a wrong token.
      await expect(TestSocket.open(gateway.ws('/'), { headers: { Authorization: 'Bearer wrong' } })).rejects.toBeInstanceOf(UpgradeRefused);

      const response = await fetch(gateway.http('/metrics'), { headers: auth });
      expect(response.status).toBe(200);
      text = await response.text();
      families = parse(text);
    });
    afterAll(async () => {
      await device?.close();
      await stack?.close();
    });

    it('counts tool calls by protocol, tool, source and outcome', async () => {
      const calls = (labels: Record<string, string>) => valueOf(families, 'gateway_tool_calls_total', labels);
      expect(families.get('gateway_tool_calls_total')!.type).toBe('COUNTER');
      expect(calls({ protocol: 'llm', tool: 'calculator', source: 'module', outcome: 'ok' })).toBe(1);
      expect(calls({ protocol: 'mcp', tool: 'calculator', source: 'module', outcome: 'ok' })).toBe(1);
      expect(calls({ protocol: 'litemcp', tool: 'calculator', source: 'module', outcome: 'ok' })).toBe(1);
      expect(calls({ protocol: 'utcp', tool: 'calculator', source: 'module', outcome: 'TOOL_EXECUTION_FAILED' })).toBe(1);
      expect(calls({ protocol: 'utcp', tool: 'other', source: 'unknown', outcome: 'TOOL_NOT_FOUND' })).toBe(1);
      expect(calls({ protocol: 'llm', tool: 'other', source: 'client', outcome: 'ok' })).toBe(1);
      const durations = families.get('gateway_tool_call_duration_seconds')!;
      expect(durations.type).toBe('HISTOGRAM');
      expect(await histogramCount(stack.gateway, 'gateway_tool_call_duration_seconds', { protocol: 'mcp', tool: 'calculator' })).toBe(1);
      expect(await histogramCount(stack.gateway, 'gateway_tool_call_duration_seconds', { protocol: 'llm', source: 'client' })).toBe(1);
    });

    it('never makes a label of a name a client chose', () => {
      expect(text).not.toContain(DEVICE_TOOL);
      expect(text).not.toContain('made_up_tool_name');
    });

    it('counts device tool round trips, turns, model requests and their latencies', async () => {
      expect(valueOf(families, 'gateway_client_tool_round_trips_total', { outcome: 'ok' })).toBe(1);
      expect(valueOf(families, 'gateway_client_tool_round_trip_seconds')).toBe(1);
      expect(valueOf(families, 'gateway_turns_total', { outcome: 'answered' })).toBe(2);
      expect(valueOf(families, 'gateway_turn_duration_seconds')).toBe(2);
      expect(valueOf(families, 'gateway_turn_first_sentence_seconds')).toBe(2);
      expect(families.get('gateway_llm_request_duration_seconds')!.type).toBe('HISTOGRAM');
      expect(await histogramCount(stack.gateway, 'gateway_llm_request_duration_seconds', { outcome: 'ok' })).toBe(4);
      expect(valueOf(families, 'gateway_llm_first_token_seconds')).toBe(4);
    });

    it('counts frames, errors by code and refusals by reason', () => {
      expect(valueOf(families, 'gateway_frames_total', { protocol: 'llm', outcome: 'ok' })).toBeGreaterThanOrEqual(4);
      expect(valueOf(families, 'gateway_frames_total', { protocol: 'llm', outcome: 'error' })).toBe(1);
      expect(valueOf(families, 'gateway_errors_total', { protocol: 'llm', code: 'INVALID_MESSAGE' })).toBe(1);
      expect(valueOf(families, 'gateway_refused_connections_total', { reason: 'auth' })).toBe(1);
    });

    it('reports connections by protocol, sessions and the process', () => {
      expect(valueOf(families, 'gateway_connections', { protocol: 'llm' })).toBe(1);
      for (const protocol of ['mcp', 'litemcp', 'utcp']) expect(valueOf(families, 'gateway_connections', { protocol })).toBe(0);
      expect(valueOf(families, 'gateway_sessions')).toBe(1);
      expect(valueOf(families, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
      expect(families.has('nodejs_eventloop_lag_seconds')).toBe(true);
    });

    it('asks for a token whenever auth is on', async () => {
      const { gateway } = stack;
      const missing = await fetch(gateway.http('/metrics'));
      expect(missing.status).toBe(401);
      expect(await missing.text()).not.toContain('gateway_');
      expect((await fetch(gateway.http('/metrics'), { headers: { Authorization: 'Bearer wrong' } })).status).toBe(403);
      expect((await fetch(gateway.http(`/metrics?token=${TOKEN}`))).status).toBe(200);
    });

    it('counts an origin refusal on HTTP', async () => {
      const { gateway } = stack;
      const before = valueOf(await scrape(gateway.http('/metrics')), 'gateway_refused_connections_total', { reason: 'origin' }) ?? 0;
      const refused = await fetch(gateway.http('/tools'), { headers: { ...auth, Origin: 'https://evil.example' } });
      expect(refused.status).toBe(403);
      expect(valueOf(await scrape(gateway.http('/metrics')), 'gateway_refused_connections_total', { reason: 'origin' })).toBe(before + 1);
    });
  });

  describe('the monitoring profile and the dashboard', () => {
    const read = (file: string) => readFileSync(join(PROJECT_ROOT, file), 'utf8');
    const compose = load(read('docker-compose.yml')) as any;
    const dashboard = JSON.parse(read('deploy/grafana/dashboards/voice-tool-gateway.json'));

    it('adds Prometheus and Grafana under the monitoring profile, scraping every replica on its METRICS_PORT', () => {
      const { gateway, prometheus, grafana } = compose.services;
      expect(prometheus.profiles).toEqual(['monitoring']);
      expect(grafana.profiles).toEqual(['monitoring']);
      const scrape = (load(read('deploy/prometheus.yml')) as any).scrape_configs[0].dns_sd_configs[0];
      expect(scrape).toMatchObject({ names: ['gateway'], port: Number(gateway.environment.METRICS_PORT) });
      expect(prometheus.volumes).toContain('./deploy/prometheus.yml:/etc/prometheus/prometheus.yml:ro');
      expect(grafana.volumes).toEqual(expect.arrayContaining(['./deploy/grafana/provisioning:/etc/grafana/provisioning:ro']));
      const datasource = (load(read('deploy/grafana/provisioning/datasources/prometheus.yml')) as any).datasources[0];
      expect(dashboard.panels.every((panel: any) => panel.datasource.uid === datasource.uid)).toBe(true);
    });

    it('queries only families a gateway serves', async () => {
      const gateway = await startGateway();
      try {
        const served = await scrape(gateway.http('/metrics'), {});
        const queried = new Set<string>(
          dashboard.panels.flatMap((panel: any) => panel.targets.flatMap((target: any) => target.expr.match(/\b(?:gateway|process|nodejs)_\w+/g))),
        );
        const family = (name: string) => name.replace(/_(bucket|sum|count)$/, '');
        const missing = [...queried].filter((name) => !served.has(family(name)) && !served.has(name));
        // Families with labels appear once something happened; the empty gateway must still declare them.
        const text = await (await fetch(gateway.http('/metrics'))).text();
        expect(missing.filter((name) => !text.includes(`# TYPE ${family(name)} `))).toEqual([]);
        expect(queried.size).toBeGreaterThan(15);
      } finally {
        await gateway.close();
      }
    });
  });

  describe('on METRICS_PORT', () => {
    let gateway: RunningGateway;
    let other: RunningGateway;
    let metricsUrl: string;

    beforeAll(async () => {
      const port = await freePort();
      metricsUrl = `http://127.0.0.1:${port}`;
      gateway = await startGateway({ AUTH_TOKENS: TOKEN, METRICS_PORT: port });
      other = await startGateway();
    });
    afterAll(async () => {
      await gateway?.close();
      await other?.close();
    });

    it('serves /metrics there, without a token, and no longer on CLOUD_PORT', async () => {
      const liteMcp = await LiteMcpClient.connect(gateway.ws('/litemcp/calculator'), TOKEN);
      await liteMcp.call('calculator', ['2', '3', 'add']);
      liteMcp.close();
      const families = await scrape(`${metricsUrl}/metrics`, {});
      expect(valueOf(families, 'gateway_tool_calls_total', { protocol: 'litemcp', tool: 'calculator', outcome: 'ok' })).toBe(1);
      expect((await fetch(gateway.http('/metrics'), { headers: auth })).status).toBe(404);
    });

    it('keeps one registry per app: the other gateway in this process saw no call', async () => {
      const families = await scrape(other.http('/metrics'), {});
      expect(valueOf(families, 'gateway_tool_calls_total', { protocol: 'litemcp' })).toBeUndefined();
      expect(families.has('process_cpu_user_seconds_total')).toBe(true);
    });

    it('answers nothing but GET /metrics', async () => {
      expect((await fetch(`${metricsUrl}/health`)).status).toBe(404);
      const post = await fetch(`${metricsUrl}/metrics`, { method: 'POST' });
      expect(post.status).toBe(405);
      expect(post.headers.get('allow')).toBe('GET, HEAD');
    });

    it('refuses a port that is taken, naming the setting', async () => {
      const taken = Number(new URL(metricsUrl).port);
      await expect(startGateway({ METRICS_PORT: taken })).rejects.toThrow(/METRICS_PORT: cannot listen on 127\.0\.0\.1:\d+/);
    });
  });
});
