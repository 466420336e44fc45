import { Parser, type AsyncAPIDocumentInterface } from '@asyncapi/parser';
import Ajv, { type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { readFileSync } from 'fs';
import { join } from 'path';
import { CLIENT_FRAME_SCHEMAS, SERVER_FRAME_TYPES } from '../../src/llm-gateway/protocol';
import { frameHandlersOf } from '../../src/core/ws/on-frame.decorator';
import { FrameEvent } from '../../src/core/ws/frame-parser';
import { callFrameSchema as liteMcpCallSchema, getFrameSchema as liteMcpGetSchema } from '../../src/litemcp/dto/litemcp.dto';
import { LiteMcpGateway } from '../../src/litemcp/litemcp.gateway';
import { LlmGateway } from '../../src/llm-gateway/llm-gateway.gateway';
import { closeEnvelopeSchema, messageEnvelopeSchema, pongEnvelopeSchema } from '../../src/mcp/dto/mcp.dto';
import { McpGateway } from '../../src/mcp/mcp.gateway';
import { callFrameSchema as utcpCallSchema, discoverFrameSchema as utcpDiscoverSchema } from '../../src/utcp/dto/utcp.dto';
import { UtcpToolGateway } from '../../src/utcp/utcp-tool.gateway';
import { UtcpGateway } from '../../src/utcp/utcp.gateway';
import { LlmStack, startLlmStack } from '../support/llm-stack';
import { PROJECT_ROOT } from '../support/built';
import { toolResults } from '../support/scripted-llm';
import { TestSocket } from '../support/test-socket';

const DOCUMENT = join(PROJECT_ROOT, 'docs', 'asyncapi.yaml');
const TOKEN = 'asyncapi-token';

type Schema = Record<string, any>;

/** The `type` a frame schema fixes (`properties.type.const`), looking through oneOf/allOf. */
function frameTypeOf(schema: Schema | undefined): string | undefined {
  if (!schema) return undefined;
  const own = schema.properties?.type?.const;
  if (typeof own === 'string') return own;
  for (const part of [...(schema.oneOf ?? []), ...(schema.allOf ?? [])]) {
    const found = frameTypeOf(part);
    if (found) return found;
  }
  return undefined;
}

/** The frame types the gateway class handles, by its `@OnFrame` handlers (events for untyped frames left out). */
function handledTypes(gateway: { prototype: object }): string[] {
  const events = new Set<string>(Object.values(FrameEvent));
  return [...new Set(frameHandlersOf(gateway.prototype).map((handler) => handler.type))].filter((type) => !events.has(type)).sort();
}

describe('docs/asyncapi.yaml', () => {
  let document: AsyncAPIDocumentInterface;
  const ajv = addFormats(new Ajv({ strict: false, allErrors: true }));

  /**
   * The payload schemas of an operation's messages, by the frame type each fixes, or by
   * `#<message name>` for frames without a `type` (a UTCP manual, a tool's plain result).
   */
  function payloads(operationId: string): Map<string, Schema> {
    const operation = document
      .operations()
      .all()
      .find((candidate) => candidate.id() === operationId);
    if (!operation) throw new Error(`docs/asyncapi.yaml has no operation ${operationId}`);
    const byType = new Map<string, Schema>();
    for (const message of operation.messages().all()) {
      const payload = message.payload()?.json() as Schema | undefined;
      if (payload) byType.set(frameTypeOf(payload) ?? `#${message.name()}`, payload);
    }
    return byType;
  }

  /** The frame types an operation's messages fix. */
  const typesOf = (operationId: string) => [...payloads(operationId).keys()].filter((key) => !key.startsWith('#')).sort();

  const validators = new Map<Schema, ValidateFunction>();
  /** Checks `frame` against the payload of the message of `operationId` with its type (or the named one, for untyped frames). */
  function expectDocumented(operationId: string, frame: any, untypedMessage?: string): void {
    const schema = payloads(operationId).get(untypedMessage ? `#${untypedMessage}` : frame.type);
    if (!schema) throw new Error(`${operationId} has no message of type ${JSON.stringify(frame.type)}: ${JSON.stringify(frame)}`);
    let validate = validators.get(schema);
    if (!validate) validators.set(schema, (validate = ajv.compile(schema)));
    if (!validate(frame)) throw new Error(`${operationId} ${frame.type}: ${ajv.errorsText(validate.errors)} in ${JSON.stringify(frame)}`);
  }

  beforeAll(async () => {
    const { document: parsed, diagnostics } = await new Parser().parse(readFileSync(DOCUMENT, 'utf8'));
    // 0 is an error, 1 a warning (2 and 3, information and hints, such as "3.1.0 exists", may stay).
    expect(
      diagnostics
        .filter((diagnostic) => diagnostic.severity <= 1)
        .map((diagnostic) => `${diagnostic.code}: ${diagnostic.message} at ${diagnostic.path.join('.')}`),
    ).toEqual([]);
    expect(parsed).toBeDefined();
    document = parsed!;
  });

  it('is AsyncAPI 3.0 with a channel at every WebSocket route of the gateway', () => {
    expect(document.version()).toBe('3.0.0');
    const addresses = document
      .channels()
      .all()
      .map((channel) => channel.address());
    expect(new Set(addresses)).toEqual(new Set(['/', '/llm', '/mcp', '/litemcp/{tool}', '/utcp', '/utcp/{tool}', '/xiaozhi/v1/']));
  });

  it('names every frame type the LLM gateway accepts and sends, on both its paths', () => {
    const accepted = handledTypes(LlmGateway);
    expect(accepted).toEqual(Object.keys(CLIENT_FRAME_SCHEMAS).sort());
    for (const [receive, send] of [
      ['llmReceive', 'llmSend'],
      ['llmAliasReceive', 'llmAliasSend'],
    ]) {
      expect(typesOf(receive)).toEqual(accepted);
      expect(typesOf(send)).toEqual([...SERVER_FRAME_TYPES].sort());
    }
  });

  it('names every frame type the MCP envelope, LiteMCP and UTCP gateways accept', () => {
    expect(typesOf('mcpEnvelopeReceive')).toEqual(handledTypes(McpGateway));
    expect(typesOf('liteMcpReceive')).toEqual(handledTypes(LiteMcpGateway));
    expect(typesOf('utcpReceive')).toEqual(handledTypes(UtcpGateway));
    expect(typesOf('utcpToolReceive')).toEqual(handledTypes(UtcpToolGateway));
  });

  it('gives each client frame the fields and required fields of the schema the gateway validates it with', () => {
    const pairs: [string, string, Schema][] = [
      ...Object.entries(CLIENT_FRAME_SCHEMAS).map(([type, schema]) => ['llmReceive', type, schema] as [string, string, Schema]),
      ['mcpEnvelopeReceive', 'message', messageEnvelopeSchema],
      ['mcpEnvelopeReceive', 'pong', pongEnvelopeSchema],
      ['mcpEnvelopeReceive', 'close', closeEnvelopeSchema],
      ['liteMcpReceive', 'get', liteMcpGetSchema],
      ['liteMcpReceive', 'call', liteMcpCallSchema],
      ['utcpReceive', 'call', utcpCallSchema],
      ['utcpReceive', 'discover', utcpDiscoverSchema],
    ];
    for (const [operation, type, code] of pairs) {
      const documented = payloads(operation).get(type)!;
      expect({ frame: `${operation} ${type}`, fields: Object.keys(documented.properties).sort(), required: [...documented.required].sort() }).toEqual({
        frame: `${operation} ${type}`,
        fields: Object.keys(code.properties).sort(),
        required: [...code.required].sort(),
      });
    }
  });

  it('lists every error code an LLM-gateway error frame or a UTCP error can carry', () => {
    const llmCodes = payloads('llmSend').get('error')!.properties.code.enum;
    expect(llmCodes).toEqual(
      expect.arrayContaining([
        'INVALID_MESSAGE',
        'UNKNOWN_MESSAGE_TYPE',
        'LLM_ERROR',
        'SESSION_ERROR',
        'TIMEOUT',
        'TOOL_RESULT_TIMEOUT',
        'TOOL_REGISTRATION_FAILED',
        'INTERNAL_ERROR',
        'RATE_LIMITED',
        'BUDGET_EXCEEDED',
      ]),
    );
    expect(payloads('utcpSend').get('error')!.properties.error.properties.code.enum).toEqual(
      expect.arrayContaining([
        'TOOL_NOT_FOUND',
        'INVALID_TOOL_PARAMETERS',
        'TOOL_EXECUTION_FAILED',
        'TOOL_TIMEOUT',
        'TOOL_UNAVAILABLE',
        'INVALID_MESSAGE',
        'UNKNOWN_MESSAGE_TYPE',
        'PAYLOAD_TOO_LARGE',
        'UNAUTHORIZED',
        'FORBIDDEN',
      ]),
    );
  });

  it('rejects a frame that breaks it (the check below can fail)', () => {
    expect(() => expectDocumented('llmSend', { type: 'llm_response', content: 5, timestamp: 'now' })).toThrow(/llm_response/);
    expect(() => expectDocumented('llmSend', { type: 'nonsense' })).toThrow(/no message of type "nonsense"/);
  });

  describe('against the frames a live gateway sends', () => {
    let stack: LlmStack;

    beforeAll(async () => {
      stack = await startLlmStack({ AUTH_TOKENS: TOKEN });
    });
    afterAll(() => stack?.close());

    /** Reads frames until `done` says so; answers tool callbacks; returns them all. */
    async function readUntil(socket: TestSocket, done: (frame: any) => boolean, onFrame: (frame: any) => void = () => undefined): Promise<any[]> {
      const frames: any[] = [];
      for (let i = 0; i < 50; i += 1) {
        const frame = await socket.next(5000).catch((error: Error) => {
          throw new Error(`${error.message} after ${JSON.stringify(frames)}`);
        });
        frames.push(frame);
        onFrame(frame);
        if (done(frame)) return frames;
      }
      throw new Error(`No end among ${JSON.stringify(frames)}`);
    }

    it('LLM gateway: a session with device and server tools, streaming, errors, cancel and session frames', async () => {
      const socket = await TestSocket.open(stack.gateway.ws(`/llm?token=${TOKEN}`));
      const sent: any[] = [];
      const send = (frame: any) => {
        sent.push(frame);
        socket.send(frame);
      };
      const received: any[] = [await socket.next()];

      send({
        type: 'register_tools',
        tools: [
          { name: 'get_battery', description: 'Battery level', parameters: { type: 'object', properties: {} } },
          { name: '1bad', description: 'x', parameters: { type: 'object' } },
        ],
      });
      received.push(...(await readUntil(socket, (frame) => frame.type === 'tools_registered')));
      send({ type: 'configure', stream: true, language: 'en' });
      send({ type: 'ping' });
      received.push(...(await readUntil(socket, (frame) => frame.type === 'pong')));

      stack.llm.reset();
      stack.llm.reply(
        {
          toolCalls: [
            { id: 'w', name: 'get_weather', arguments: { city: 'Beijing' } },
            { id: 'b', name: 'get_battery', arguments: {} },
          ],
        },
        (request) => ({ text: `It is ${toolResults(request).w.condition}. The battery is at ${toolResults(request).b.level} percent.` }),
      );
      send({ type: 'text_input', text: 'Weather and battery?', turn_id: 'turn-1' });
      received.push(
        ...(await readUntil(
          socket,
          (frame) => frame.type === 'status' && frame.status === 'idle',
          (frame) => frame.type === 'tool_callback' && send({ type: 'tool_result', call_id: frame.call_id, success: true, result: { level: 80 } }),
        )),
      );
      socket.send({ type: 'text_input', text: ' ' }); // refused: not a documented frame
      socket.send({ type: 'bogus' });
      received.push(...(await readUntil(socket, (frame) => frame.type === 'error' && frame.code === 'UNKNOWN_MESSAGE_TYPE')));
      send({ type: 'cancel' });
      send({ type: 'start_session' });
      send({ type: 'end_session' });
      let ended = false;
      received.push(
        ...(await readUntil(
          socket,
          (frame) => ended && frame.type === 'status' && frame.status === 'connected',
          (frame) => (ended ||= frame.type === 'status' && frame.data.message === 'Session ended'),
        )),
      );
      await socket.close();

      const types = new Set(received.map((frame) => (frame.type === 'status' ? `status:${frame.status}` : frame.type)));
      expect([...types].sort()).toEqual(
        [
          'error',
          'llm_response',
          'pong',
          'status:connected',
          'status:idle',
          'status:processing',
          'status:waiting_for_tools',
          'tool_call',
          'tool_callback',
          'tools_registered',
        ].sort(),
      );
      expect(received.some((frame) => frame.type === 'llm_response' && frame.is_final === false)).toBe(true);
      for (const frame of received) expectDocumented('llmSend', frame);
      for (const frame of sent) expectDocumented('llmReceive', frame);
    });

    it('LLM gateway: a cancelled turn', async () => {
      const socket = await TestSocket.open(stack.gateway.ws(`/?token=${TOKEN}`));
      const received: any[] = [await socket.next()];
      stack.llm.reset();
      stack.llm.reply({ text: 'One. Two. Three. Four. Five.', pace: { firstTokenMs: 50, tokensPerSecond: 5 } });
      socket.send({ type: 'configure', stream: true });
      socket.send({ type: 'text_input', text: 'Count', turn_id: 'count' });
      received.push(...(await readUntil(socket, (frame) => frame.type === 'llm_response')));
      socket.send({ type: 'cancel', turn_id: 'count', spoken: received.at(-1).content });
      received.push(...(await readUntil(socket, (frame) => frame.type === 'status' && frame.status === 'idle')));
      await socket.close();
      expect(received.filter((frame) => frame.type === 'error')).toEqual([]);
      expect(received.map((frame) => frame.status ?? frame.type)).toContain('cancelled');
      for (const frame of received) expectDocumented('llmSend', frame);
    });

    it('LiteMCP, UTCP and the MCP envelope', async () => {
      const headers = { Authorization: `Bearer ${TOKEN}` };
      const lite = await TestSocket.open(stack.gateway.ws('/litemcp/calculator'), { headers });
      const liteSent: any[] = [
        { version: [1, 0, 0], id: 1, type: 'get', data: {} },
        { version: [1, 0, 0], id: 2, type: 'call', data: { version: [1, 0, 0], tool: 'calculator', arguments: ['2', '3'] } },
        { version: [1, 0, 0], id: 3, type: 'call', data: { version: [1, 0, 0], tool: 'calculator', arguments: ['x'] } },
        { version: [1, 0, 0], id: 4, type: 'nope' },
      ];
      for (const frame of liteSent) {
        lite.send(frame);
        expectDocumented('liteMcpSend', await lite.next());
      }
      for (const frame of liteSent.slice(0, 3)) expectDocumented('liteMcpReceive', frame);
      await lite.close();

      const utcp = await TestSocket.open(stack.gateway.ws('/utcp'));
      const utcpSent: any[] = [
        { type: 'call', id: 'early', tool: 'calculator', params: { a: 1, b: 2 } },
        { type: 'auth', token: TOKEN, id: 'a' },
        { type: 'utcp' },
        { type: 'discover', id: 1 },
        { type: 'call', id: 'c1', tool: 'calculator', params: { a: 2, b: 3 } },
        { type: 'call', id: 'c2', tool: 'countdown', params: { seconds: 1, interval: 0.5 } },
        { type: 'call', id: 'c3', tool: 'nope', params: {} },
      ];
      const utcpReceived: any[] = [];
      for (const frame of utcpSent) {
        utcp.send(frame);
        utcpReceived.push(await utcp.next());
        if (frame.id === 'c2') utcpReceived.push(...(await readUntil(utcp, (answer) => answer.partial === false)));
      }
      await utcp.close();
      for (const frame of utcpReceived) expectDocumented('utcpSend', frame, frame.type === undefined ? 'manual' : undefined);
      for (const frame of utcpSent) expectDocumented('utcpReceive', frame);
      expect(new Set(utcpReceived.map((frame) => frame.type ?? 'manual'))).toEqual(new Set(['error', 'auth_ok', 'manual', 'discovery_response', 'result']));
      expect(utcpReceived.filter((frame) => frame.partial === true).length).toBeGreaterThan(0);

      const tool = await TestSocket.open(stack.gateway.ws('/utcp/countdown?stream=true'), { headers });
      tool.send({ seconds: 1, interval: 0.5 });
      const streamed = await readUntil(tool, (frame) => frame.type === 'stream_end');
      tool.send({ seconds: -1 });
      streamed.push(await tool.next());
      await tool.close();
      for (const frame of streamed) expectDocumented('utcpToolSend', frame);
      expect(streamed.at(-1).type).toBe('tool_error');

      const mcp = await TestSocket.open(stack.gateway.ws('/mcp'));
      const mcpSent: any[] = [
        { type: 'auth', token: TOKEN, clientInfo: { name: 'asyncapi-test', version: '1.0.0' }, timestamp: Date.now() },
        {
          type: 'message',
          payload: {
            jsonrpc: '2.0',
            id: 1,
            method: 'initialize',
            params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
          },
        },
        { type: 'message', payload: 'not an object' },
        { type: 'close', reason: 'done' },
      ];
      const mcpReceived: any[] = [];
      for (const frame of mcpSent) {
        mcp.send(frame);
        mcpReceived.push(await mcp.next());
      }
      await mcp.closed;
      expect(mcpReceived.map((frame) => frame.type)).toEqual(['auth', 'message', 'error', 'close']);
      for (const frame of mcpReceived) expectDocumented('mcpEnvelopeSend', frame);
      for (const frame of mcpSent.filter((frame) => typeof frame.payload !== 'string')) expectDocumented('mcpEnvelopeReceive', frame);
    });
  });
});
