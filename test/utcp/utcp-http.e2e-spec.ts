import { GatewayError, GatewayErrorCode } from '../../src/core/errors/gateway-error';
import { ToolError } from '../../src/core/tools/tool-error';
import { ToolRegistryService } from '../../src/core/tools/tool-registry.service';
import { RunningGateway, startGateway } from '../support/gateway';
import { tickerRunFinished, TestToolsModule } from '../support/test-tools';
import { CalculatorModule } from '../../src/examples/calculator/calculator.module';

const TOKEN = 'utcp-http-token';
const AUTH = { Authorization: `Bearer ${TOKEN}` };
const JSON_BODY = { ...AUTH, 'Content-Type': 'application/json' };

interface ServerSentEvent {
  event: string;
  data: unknown;
}

/** Reads server-sent events off a fetch body as they come (the SDK's SSE plugin sends no request yet). */
class EventReader {
  private buffer = '';
  private readonly decoder = new TextDecoder();
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;

  constructor(response: Response) {
    this.reader = response.body!.getReader();
  }

  /** The next event, or `undefined` when the stream ended; comments (keep-alives) are skipped. */
  async next(): Promise<ServerSentEvent | undefined> {
    for (;;) {
      const end = this.buffer.indexOf('\n\n');
      if (end >= 0) {
        const block = this.buffer.slice(0, end);
        this.buffer = this.buffer.slice(end + 2);
        const fields = Object.fromEntries(
          block
            .split('\n')
            .filter((line) => !line.startsWith(':'))
            .map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim()]),
        );
        if (fields.data !== undefined) return { event: fields.event ?? 'message', data: JSON.parse(fields.data) };
        continue;
      }
      const { done, value } = await this.reader.read();
      if (done) return undefined;
      this.buffer += this.decoder.decode(value, { stream: true });
    }
  }

  /** Every event up to the end of the stream. */
  async rest(): Promise<ServerSentEvent[]> {
    const events: ServerSentEvent[] = [];
    for (let event = await this.next(); event; event = await this.next()) events.push(event);
    return events;
  }

  cancel(): Promise<void> {
    return this.reader.cancel();
  }
}

const post = (gateway: RunningGateway, path: string, body?: unknown, headers: Record<string, string> = JSON_BODY, signal?: AbortSignal) =>
  fetch(gateway.http(path), { method: 'POST', headers, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body), signal });

/** Counts the responses the server has not finished or closed yet: a call that leaked would stay counted. */
function trackOpenResponses(gateway: RunningGateway): () => Promise<number> {
  let open = 0;
  (gateway.app.getHttpServer() as import('http').Server).on('request', (_request, response: import('http').ServerResponse) => {
    open += 1;
    response.once('close', () => (open -= 1));
  });
  /** Waits (bounded) for every response to be over, then says how many are still open. */
  return async (timeoutMs = 2000) => {
    const deadline = Date.now() + timeoutMs;
    while (open > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    return open;
  };
}

describe('UTCP over HTTP', () => {
  let gateway: RunningGateway;
  let openResponses: () => Promise<number>;

  beforeAll(async () => {
    gateway = await startGateway({ AUTH_TOKENS: TOKEN, CLOUD_MAX_MESSAGE_SIZE: 4096 }, [CalculatorModule, TestToolsModule]);
    openResponses = trackOpenResponses(gateway);
  });
  afterAll(() => gateway.close());

  describe('the manual at GET /utcp?call_template=http', () => {
    const manual = async (query: string, headers: Record<string, string> = AUTH) => {
      const response = await fetch(gateway.http(`/utcp?call_template=http${query}`), { headers });
      return { status: response.status, body: await response.json() };
    };
    type HttpManual = { tools: { name: string; tool_call_template: { call_template_type: string; url: string } }[] };
    const templatesOf = (body: unknown) => Object.fromEntries((body as HttpManual).tools.map((tool) => [tool.name, tool.tool_call_template]));

    it('gives http templates reaching POST /utcp/<tool>, sse ones for streaming tools, the token as a variable', async () => {
      const { status, body } = await manual('');
      expect(status).toBe(200);
      const templates = templatesOf(body);
      const auth = { auth_type: 'api_key', api_key: 'Bearer ${GATEWAY_TOKEN}', var_name: 'Authorization', location: 'header' };
      expect(templates.calculator).toEqual({
        call_template_type: 'http',
        name: 'calculator',
        url: gateway.http('/utcp/calculator'),
        http_method: 'POST',
        content_type: 'application/json',
        body_field: 'body',
        auth,
      });
      expect(templates.countdown).toEqual({
        call_template_type: 'sse',
        name: 'countdown',
        url: gateway.http('/utcp/countdown?stream=true'),
        body_field: 'body',
        headers: { 'Content-Type': 'application/json' },
        reconnect: false,
        auth,
      });
      expect(JSON.stringify(body)).not.toContain(TOKEN);
    });

    it('streams every template with stream=true and none with stream=false', async () => {
      const streaming = templatesOf((await manual('&stream=true')).body);
      expect(Object.values(streaming).every((template) => template.call_template_type === 'sse')).toBe(true);
      const plain = templatesOf((await manual('&stream=false')).body);
      expect(Object.values(plain).every((template) => template.call_template_type === 'http' && !template.url.includes('?'))).toBe(true);
    });

    it('points behind a proxy at the public scheme, host and prefix from X-Forwarded-*', async () => {
      const { body } = await manual('', { ...AUTH, 'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': 'tools.example.com', 'X-Forwarded-Prefix': '/voice' });
      expect(templatesOf(body).calculator.url).toBe('https://tools.example.com/voice/utcp/calculator');
    });

    it('leaves plain GET /utcp as it was: websocket templates', async () => {
      const response = await fetch(gateway.http('/utcp'), { headers: AUTH });
      expect(templatesOf(await response.json()).calculator).toMatchObject({ call_template_type: 'websocket', url: gateway.ws('/utcp/calculator') });
    });

    it('refuses an unknown call template type, and a caller without the token', async () => {
      const unknown = await fetch(gateway.http('/utcp?call_template=grpc'), { headers: AUTH });
      expect({ status: unknown.status, body: await unknown.json() }).toEqual({
        status: 400,
        body: { error: { code: 'INVALID_MESSAGE', message: 'The "call_template" query parameter must be "websocket" or "http"' } },
      });
      expect((await manual('', {})).status).toBe(401);
    });
  });

  describe('calls at POST /utcp/<tool>', () => {
    it('answers the result as JSON, for the token in the header or in ?token=', async () => {
      const response = await post(gateway, '/utcp/calculator', { a: 2, b: 3 });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await response.json()).toBe(5);
      const viaQuery = await post(gateway, `/utcp/calculator?token=${TOKEN}`, { a: 2, b: 3, operation: 'subtract' }, { 'Content-Type': 'application/json' });
      expect(await viaQuery.json()).toBe(-1);
    });

    it('runs a tool without arguments with no body at all', async () => {
      const response = await post(gateway, '/utcp/list_supported_languages', undefined, AUTH);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ languages: expect.arrayContaining([{ code: 'en', name: 'English', native_name: 'English' }]) });
    });

    it.each([
      ['a tool that failed', '/utcp/calculator', { a: 1, b: 0, operation: 'divide' }, JSON_BODY, 422, 'TOOL_EXECUTION_FAILED', /^Division by zero$/],
      ['a tool past its time limit', '/utcp/test.sleepy', {}, JSON_BODY, 504, 'TOOL_TIMEOUT', /did not finish within 0\.1 s$/],
      ['arguments the schema refuses', '/utcp/calculator', { a: 'two', b: 3 }, JSON_BODY, 400, 'INVALID_TOOL_PARAMETERS', /a/],
      ['arguments that are not an object', '/utcp/calculator', [2, 3], JSON_BODY, 400, 'INVALID_TOOL_PARAMETERS', /object/],
      ['arguments in the query', '/utcp/calculator?a=2&b=3', undefined, AUTH, 400, 'INVALID_TOOL_PARAMETERS', /not in the query: a, b$/],
      ['an unknown tool', '/utcp/no.such.tool', {}, JSON_BODY, 404, 'TOOL_NOT_FOUND', /^Unknown tool "no.such.tool"$/],
      ['a body that is not JSON', '/utcp/calculator', '{"a": 2,', JSON_BODY, 400, 'INVALID_MESSAGE', /JSON/],
      [
        'a body of another content type',
        '/utcp/calculator',
        'a=2&b=3',
        { ...AUTH, 'Content-Type': 'text/plain' },
        400,
        'INVALID_MESSAGE',
        /Content-Type: application\/json/,
      ],
      ['a body over CLOUD_MAX_MESSAGE_SIZE', '/utcp/calculator', { a: 1, b: 2, pad: 'x'.repeat(5000) }, JSON_BODY, 413, 'PAYLOAD_TOO_LARGE', /4096/],
      ['a stream value it cannot read', '/utcp/calculator?stream=maybe', { a: 1, b: 2 }, JSON_BODY, 400, 'INVALID_MESSAGE', /"stream" query parameter/],
      ['no token', '/utcp/calculator', { a: 1, b: 2 }, { 'Content-Type': 'application/json' }, 401, 'UNAUTHORIZED', /token/i],
      ['a wrong token', '/utcp/calculator', { a: 1, b: 2 }, { 'Content-Type': 'application/json', Authorization: 'Bearer nope' }, 403, 'FORBIDDEN', /./],
    ])('answers %s with a tool_error and its status', async (_name, path, body, headers, status, code, message) => {
      const response = await post(gateway, path, body, headers);
      expect(response.status).toBe(status);
      expect(await response.json()).toEqual({ type: 'tool_error', code, error: expect.stringMatching(message) });
    });

    describe('a tool that failed: the status says whose the failure is, the body is the same tool_error', () => {
      const OFFLINE = 'Device "nobody-here" is not connected';
      /** Tools that fail as tools do: explained, naming a code of ours, or by a fault. */
      const FAILING: Record<string, () => never> = {
        'test.says_no': () => {
          throw new ToolError('The lights are out of reach');
        },
        'test.names_busy': () => {
          throw new ToolError('The speaker has three sentences queued', { code: 'DEVICE_BUSY' });
        },
        'test.names_own_code': () => {
          throw new ToolError('Not now', { code: 'NOT_A_GATEWAY_CODE', retry: true });
        },
        'test.throws_offline': () => {
          throw new GatewayError(GatewayErrorCode.DEVICE_OFFLINE, OFFLINE);
        },
        'test.breaks': () => {
          throw new Error('secret connection string');
        },
      };

      beforeAll(() => {
        const registry = gateway.app.get(ToolRegistryService);
        for (const [name, handler] of Object.entries(FAILING)) {
          registry.register({ name, description: 'Fails', inputSchema: { type: 'object' }, source: 'module', handler });
        }
      });
      afterAll(() => {
        const registry = gateway.app.get(ToolRegistryService);
        for (const name of Object.keys(FAILING)) registry.unregister(name);
      });

      it.each([
        ['a ToolError: 422', '/utcp/test.says_no', {}, 422, { error: 'The lights are out of reach' }],
        [
          'a ToolError naming DEVICE_BUSY: 429',
          '/utcp/test.names_busy',
          {},
          429,
          { error: 'The speaker has three sentences queued', details: { code: 'DEVICE_BUSY' } },
        ],
        [
          'a ToolError naming no code of ours: 422',
          '/utcp/test.names_own_code',
          {},
          422,
          { error: 'Not now', details: { code: 'NOT_A_GATEWAY_CODE', retry: true } },
        ],
        [
          "a GatewayError of the gateway's own: its code's status",
          '/utcp/test.throws_offline',
          {},
          404,
          { error: OFFLINE, details: { code: 'DEVICE_OFFLINE' } },
        ],
        [
          "the fleet's device_say to a device that is not connected: 404",
          '/utcp/device_say',
          { device_id: 'nobody-here', text: 'Dinner is ready.' },
          404,
          // The refused push's receipt id, to read its `refused` state by.
          { error: OFFLINE, details: { code: 'DEVICE_OFFLINE', push_id: expect.stringMatching(/^push-/) } },
        ],
        [
          "the fleet's device_say naming no device: 400",
          '/utcp/device_say',
          { text: 'Dinner is ready.' },
          400,
          { error: 'Give exactly one of device_id and device_ids', details: { code: 'INVALID_MESSAGE' } },
        ],
        ['a fault (a plain Error): 500, and nothing of it', '/utcp/test.breaks', {}, 500, { error: 'Tool "test.breaks" failed with an internal error' }],
      ])('%s', async (_name, path, body, status, failure) => {
        const response = await post(gateway, path, body);
        expect({ status: response.status, body: await response.json() }).toEqual({
          status,
          body: { type: 'tool_error', code: 'TOOL_EXECUTION_FAILED', ...failure },
        });
      });

      it('answers a streaming call that fails before its first result with the same status', async () => {
        const response = await post(gateway, '/utcp/device_say?stream=true', { device_id: 'nobody-here', text: 'Dinner is ready.' });
        expect(response.status).toBe(404);
        expect(await response.json()).toEqual({
          type: 'tool_error',
          code: 'TOOL_EXECUTION_FAILED',
          error: OFFLINE,
          details: { code: 'DEVICE_OFFLINE', push_id: expect.stringMatching(/^push-/) },
        });
      });
    });

    it('does not tell a caller without a token whether a tool exists', async () => {
      const response = await post(gateway, '/utcp/no.such.tool', {}, { 'Content-Type': 'application/json' });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Bearer');
    });

    it('stops the call when the client goes away', async () => {
      const client = new AbortController();
      const call = post(gateway, '/utcp/test.ticker', { run: 'http-json-gone' }, JSON_BODY, client.signal);
      await new Promise((resolve) => setTimeout(resolve, 100));
      client.abort();
      await expect(call).rejects.toThrow();
      await expect(tickerRunFinished('http-json-gone')).resolves.toBeUndefined();
      expect(await openResponses()).toBe(0);
    });
  });

  describe('streaming calls at POST /utcp/<tool>?stream=true', () => {
    it('sends every result of a streaming tool as a tool_response event as it comes, the final one last, then ends', async () => {
      const started = Date.now();
      const response = await post(gateway, '/utcp/countdown?stream=true', { seconds: 0.3, interval: 0.1, label: 'eggs' });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
      const reader = new EventReader(response);
      const first = await reader.next();
      expect(Date.now() - started).toBeLessThan(250);
      expect(first).toEqual({ event: 'tool_response', data: expect.objectContaining({ label: 'eggs', remaining_s: 0.3, done: false }) });
      const rest = await reader.rest();
      expect(rest.map(({ event }) => event)).toEqual(['tool_response', 'tool_response', 'tool_response']);
      expect(rest.map(({ data }) => (data as { remaining_s: number }).remaining_s)).toEqual([0.2, 0.1, 0]);
      expect(rest.at(-1)!.data).toMatchObject({ done: true });
    });

    it('sends a tool that does not stream as one event', async () => {
      const response = await post(gateway, '/utcp/calculator?stream=true', { a: 4, b: 5, operation: 'multiply' });
      expect(await new EventReader(response).rest()).toEqual([{ event: 'tool_response', data: 20 }]);
    });

    it('answers a call that fails before any result with an HTTP error, not a stream', async () => {
      const response = await post(gateway, '/utcp/countdown?stream=true', { seconds: -1 });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ type: 'tool_error', code: 'INVALID_TOOL_PARAMETERS' });
    });

    it('ends a stream whose tool fails midway with a tool_error event', async () => {
      const registry = gateway.app.get(ToolRegistryService);
      registry.register({
        name: 'test.breaks_midway',
        description: 'Yields once, then fails',
        inputSchema: { type: 'object' },
        source: 'module',
        handler: async function* () {
          yield { step: 1 };
          throw new (await import('../../src/core/tools/tool-error')).ToolError('The sensor came loose');
        },
      });
      try {
        const response = await post(gateway, '/utcp/test.breaks_midway?stream=true', {});
        expect(response.status).toBe(200);
        expect(await new EventReader(response).rest()).toEqual([
          { event: 'tool_response', data: { step: 1 } },
          { event: 'tool_error', data: { type: 'tool_error', error: 'The sensor came loose', code: 'TOOL_EXECUTION_FAILED' } },
        ]);
      } finally {
        registry.unregister('test.breaks_midway');
      }
    });

    it('stops the tool when the client disconnects mid-stream, and keeps no response open', async () => {
      const client = new AbortController();
      const response = await post(gateway, '/utcp/test.ticker?stream=true', { run: 'http-sse-gone' }, JSON_BODY, client.signal);
      const reader = new EventReader(response);
      expect(await reader.next()).toEqual({ event: 'tool_response', data: { tick: 1 } });
      expect(await reader.next()).toEqual({ event: 'tool_response', data: { tick: 2 } });
      const goneAt = Date.now();
      client.abort();
      await expect(tickerRunFinished('http-sse-gone')).resolves.toBeUndefined();
      expect(Date.now() - goneAt).toBeLessThan(500);
      expect(await openResponses()).toBe(0);
    });
  });
});
