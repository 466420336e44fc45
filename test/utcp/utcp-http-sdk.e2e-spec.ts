import { UtcpClient } from '@utcp/sdk';
import '@utcp/http';
import { RunningGateway, startGateway } from '../support/gateway';

const TOKEN = 'utcp-http-secret';

/** How a UTCP client is told where our manual is: the HTTP manual, the token from a UTCP variable. */
const manualTemplate = (gateway: RunningGateway, name: string, query = '', extra: object = {}) => ({
  name,
  call_template_type: 'http',
  http_method: 'GET',
  url: gateway.http(`/utcp?call_template=http${query}`),
  auth: { auth_type: 'api_key', api_key: 'Bearer ${GATEWAY_TOKEN}', var_name: 'Authorization', location: 'header' },
  ...extra,
});

/** What the SDK's HTTP plugin throws for a non-2xx answer: axios's error, with our body in it. */
interface HttpFailure {
  response?: { status: number; data: unknown };
}

/** The status and body of the answer that made a call fail. */
const answerOf = (call: Promise<unknown>) =>
  call.then(
    () => 'no failure',
    ({ response }: HttpFailure) => ({ status: response?.status, data: response?.data }),
  );

/**
 * The only UTCP client for TypeScript, as an agent would use it: @utcp/sdk with the @utcp/http
 * plugin from npm, against the real gateway with auth on. The SDK names tools `<manual>.<tool>`
 * and looks the token up as `<manual>_GATEWAY_TOKEN`.
 */
describe('UTCP over HTTP with the TypeScript SDK (@utcp/sdk, @utcp/http)', () => {
  let gateway: RunningGateway;
  let client: UtcpClient;
  const quiet = ['log', 'warn', 'error'].map((method) => jest.spyOn(console, method as 'log').mockImplementation(() => undefined));

  beforeAll(async () => {
    gateway = await startGateway({ AUTH_TOKENS: TOKEN });
    client = await UtcpClient.create(process.cwd(), {
      variables: { gw_GATEWAY_TOKEN: TOKEN, gwall_GATEWAY_TOKEN: TOKEN, gwfinal_GATEWAY_TOKEN: TOKEN, intruder_GATEWAY_TOKEN: 'not-the-token' },
      manual_call_templates: [
        manualTemplate(gateway, 'gw'),
        manualTemplate(gateway, 'gwall', '', { allowed_communication_protocols: ['http', 'sse'] }),
        manualTemplate(gateway, 'gwfinal', '&stream=false'),
      ],
    } as never);
  });
  afterAll(async () => {
    await client?.close();
    await gateway?.close();
    quiet.forEach((spy) => spy.mockRestore());
  });

  it('loads the manual: every tool that answers in one piece, with an http template and its arguments under "body"', async () => {
    const tools = await client.getTools();
    const names = tools.map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(['gw.calculator', 'gw.get_current_time', 'gw.list_supported_languages']));
    // The SDK keeps only the manual's own template type unless told otherwise: countdown streams (sse).
    expect(names).not.toContain('gw.countdown');
    const calculator = tools.find((tool) => tool.name === 'gw.calculator')!;
    expect(calculator.tool_call_template).toMatchObject({
      call_template_type: 'http',
      http_method: 'POST',
      url: gateway.http('/utcp/calculator'),
      body_field: 'body',
    });
    expect(calculator.inputs).toMatchObject({ properties: { body: { required: ['a', 'b'] } }, required: ['body'] });
  });

  it('takes the streaming template of countdown when the manual allows sse', async () => {
    const countdown = await client.getTool('gwall.countdown');
    expect(countdown?.tool_call_template).toMatchObject({ call_template_type: 'sse', url: gateway.http('/utcp/countdown?stream=true') });
  });

  it('calls calculator, sending the token from its variable', async () => {
    await expect(client.callTool('gw.calculator', { body: { a: 6, b: 7, operation: 'multiply' } })).resolves.toBe(42);
    await expect(client.callTool('gw.calculator', { body: { a: 0.5, b: 2 } })).resolves.toBe(2.5);
  });

  it('calls countdown for its final result through a manual asked for no streaming', async () => {
    await expect(client.callTool('gwfinal.countdown', { body: { seconds: 0.2, interval: 0.1, label: 'tea' } })).resolves.toMatchObject({
      label: 'tea',
      remaining_s: 0,
      done: true,
    });
  });

  it('rejects a call whose tool failed, with the tool_error and its status', async () => {
    expect(await answerOf(client.callTool('gw.calculator', { body: { a: 1, b: 0, operation: 'divide' } }))).toEqual({
      status: 422,
      data: { type: 'tool_error', error: 'Division by zero', code: 'TOOL_EXECUTION_FAILED' },
    });
  });

  it('rejects arguments the tool does not take, and arguments left outside "body" (the plugin sends those as query parameters)', async () => {
    expect(await answerOf(client.callTool('gw.calculator', { body: { a: 'six', b: 7 } }))).toEqual({
      status: 400,
      data: { type: 'tool_error', code: 'INVALID_TOOL_PARAMETERS', error: expect.stringMatching(/a/) },
    });
    expect(await answerOf(client.callTool('gw.calculator', { a: 6, b: 7 }))).toEqual({
      status: 400,
      data: { type: 'tool_error', code: 'INVALID_TOOL_PARAMETERS', error: expect.stringMatching(/JSON request body .*"body".*not in the query: a, b/) },
    });
  });

  it('cannot load the manual with a wrong token', async () => {
    const result = await client.registerManual(manualTemplate(gateway, 'intruder') as never);
    expect(result.success).toBe(false);
    expect(result.errors.join(' ')).toMatch(/403/);
    expect(await client.getTools().then((tools) => tools.filter((tool) => tool.name.startsWith('intruder.')))).toEqual([]);
  });
});
