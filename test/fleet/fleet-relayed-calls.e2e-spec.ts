import { randomBytes } from 'crypto';
import type Redis from 'ioredis';
import { bearer, connectDevice, eventually, getJson, onPort } from '../support/fleet-client';
import { listeningPort, MainProcess, startMain } from '../support/main-process';
import { OtlpReceiver } from '../support/otlp-receiver';
import { inspector, removeKeys, TEST_REDIS_URL, uniquePrefix } from '../support/redis';
import { ScriptedLlm } from '../support/scripted-llm';

const TOKEN = 'relayed-calls-secret';
const LIGHT = { name: 'light_on', description: 'Turns the light on', parameters: { type: 'object', properties: { room: { type: 'string' } } } };

/**
 * An agent on instance B calls the tool of a device connected to instance A: the call runs
 * through A's invoker too, so A writes its audit line, its metric and its span for it (under
 * protocol `fleet`), in the agent's trace. Both instances are `node dist/main.js` processes (the
 * OTLP exporter cannot run in Jest's sandbox), their spans read once they stopped.
 */
describe('a device tool called from another replica', () => {
  const prefix = uniquePrefix();
  let redis: Redis;
  let llm: ScriptedLlm;
  let receiver: OtlpReceiver;
  let a: MainProcess;
  let b: MainProcess;

  const start = (name: string) =>
    startMain({
      REDIS_URL: TEST_REDIS_URL,
      REDIS_KEY_PREFIX: prefix,
      AUTH_TOKENS: TOKEN,
      LLM_BASE_URL: llm.baseUrl,
      CLOUD_LOG_LEVEL: 'INFO',
      CLOUD_LOG_FORMAT: 'json',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: name,
    });

  beforeAll(async () => {
    redis = await inspector();
    llm = await ScriptedLlm.start();
    receiver = await OtlpReceiver.start();
    a = start('replica-a');
    b = start('replica-b');
  });

  afterAll(async () => {
    for (const main of [a, b]) if (main.child.exitCode === null && main.child.signalCode === null) main.child.kill('SIGKILL');
    await Promise.all([a.exited, b.exited]);
    await receiver.close();
    await llm.close();
    await removeKeys(redis, prefix);
    redis.disconnect();
  });

  it('is audited, metered and traced where it ran as well as where it was asked, in one trace', async () => {
    const aAt = onPort(await listeningPort(a.output));
    const bAt = onPort(await listeningPort(b.output));
    const device = await connectDevice(aAt, 'relay-lamp', TOKEN);
    device.send({ type: 'register_tools', tools: [LIGHT] });
    expect(await device.next()).toMatchObject({ type: 'tools_registered' });
    await eventually(async () => (await getJson(bAt, '/devices/relay-lamp', TOKEN)).status === 200, 10_000, 'the device on B');

    const traceId = randomBytes(16).toString('hex');
    const call = fetch(bAt.http('/devices/relay-lamp/tools/light_on'), {
      method: 'POST',
      headers: { ...bearer(TOKEN), 'Content-Type': 'application/json', traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` },
      body: JSON.stringify({ room: 'hall' }),
    });
    const callback = await device.next(5000);
    expect(callback).toMatchObject({ type: 'tool_callback', tool_name: 'light_on', arguments: { room: 'hall' } });
    device.send({ type: 'tool_result', call_id: callback.call_id, success: true, result: 'on' });
    const answer = await call;
    expect([answer.status, await answer.json()]).toEqual([200, { result: 'on' }]);

    // Metered on A, where it ran, under `fleet` (and without the device's names in any label).
    const metrics = await (await fetch(aAt.http('/metrics'), { headers: bearer(TOKEN) })).text();
    expect(metrics).toMatch(/gateway_tool_calls_total\{protocol="fleet",tool="other",source="device",outcome="ok"\} 1/);
    // Audited on A as well as on B.
    const audited = (output: string) =>
      output
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line))
        .filter((line) => line.context === 'Audit' && JSON.stringify(line).includes('relay-lamp__light_on'));
    await eventually(() => audited(a.output()).length === 1 && audited(b.output()).length === 1, 5000, 'an audit line on each instance');
    expect(JSON.stringify(audited(a.output())[0])).toContain('"fleet"');

    await device.close();
    for (const main of [a, b]) main.child.kill('SIGTERM');
    await Promise.all([a.exited, b.exited]);
    const spans = receiver.spans.filter((span) => span.traceId === traceId && span.name === 'execute_tool relay-lamp__light_on');
    const asked = spans.find((span) => span.resource['service.name'] === 'replica-b');
    const ran = spans.find((span) => span.resource['service.name'] === 'replica-a');
    expect(asked).toBeDefined();
    expect(ran).toMatchObject({ attributes: expect.objectContaining({ 'gateway.protocol': 'fleet' }) });
    // A's span descends from B's: A's parent is B's span, or a span B made under it.
    const bSpans = new Set(
      receiver.spans.filter((span) => span.traceId === traceId && span.resource['service.name'] === 'replica-b').map((span) => span.spanId),
    );
    expect(bSpans.has(ran!.parentSpanId!)).toBe(true);
  }, 60_000);
});
