import { FrameRejection } from '../core/ws/frame-rejection';
import { compileFrameSchema, FrameSchema } from '../core/validation/frame-schema';
import { closeEnvelopeSchema, messageEnvelopeSchema, pongEnvelopeSchema } from './dto/mcp.dto';
import { toEnvelopeError } from './mcp.errors';
import { Envelope, EnvelopeError } from './mcp.frames';

/** What the dispatcher makes of an envelope checked against `schema`: nothing, or the error the client is told. */
const parse = (schema: FrameSchema, value: unknown) => {
  const problem = compileFrameSchema(schema)(value);
  return problem === undefined ? undefined : toEnvelopeError(new FrameRejection('invalid', problem));
};

describe('envelope parsing', () => {
  it.each([
    ['a message', messageEnvelopeSchema, { type: 'message', sessionId: 's', payload: { jsonrpc: '2.0', method: 'x' }, timestamp: 1 }],
    ['a message with only a payload', messageEnvelopeSchema, { type: 'message', payload: {} }],
    ['a pong', pongEnvelopeSchema, { type: 'pong', sessionId: 's', timestamp: 1712345678901 }],
    ['a close with a reason', closeEnvelopeSchema, { type: 'close', reason: 'Client disconnect' }],
    ['an envelope with fields of a later version', pongEnvelopeSchema, { type: 'pong', extra: true }],
  ])('accepts %s', (_name, schema, value) => {
    expect(parse(schema, value)).toBeUndefined();
  });

  it.each([
    ['a message without payload', messageEnvelopeSchema, { type: 'message' }, /payload must be a JSON-RPC 2\.0 message object/],
    ['a payload that is a string', messageEnvelopeSchema, { type: 'message', payload: '{"jsonrpc":"2.0"}' }, /payload must be/],
    ['a payload that is null', messageEnvelopeSchema, { type: 'message', payload: null }, /payload must be/],
    ['a sessionId that is a number', pongEnvelopeSchema, { type: 'pong', sessionId: 1 }, /sessionId must be a string/],
    [
      'a timestamp that is a date string',
      pongEnvelopeSchema,
      { type: 'pong', timestamp: '2025-01-01' },
      /timestamp must be a number \(Unix time in milliseconds\)/,
    ],
    ['a reason that is not text', closeEnvelopeSchema, { type: 'close', reason: 42 }, /reason must be a string/],
  ])('refuses %s with -32600, naming the field', (_name, schema, value, detail) => {
    const error = parse(schema, value);
    expect(error).toBeInstanceOf(EnvelopeError);
    expect(error).toMatchObject({ code: -32600, message: 'Invalid Request', data: expect.stringMatching(detail) });
  });
});

describe('server envelopes', () => {
  beforeEach(() => jest.useFakeTimers().setSystemTime(1_700_000_000_123));
  afterEach(() => jest.useRealTimers());

  it('are stamped with Unix time in milliseconds', () => {
    expect(Envelope.ping('s')).toEqual({ type: 'ping', sessionId: 's', timestamp: 1_700_000_000_123 });
    expect(Envelope.close('s', 'bye')).toEqual({ type: 'close', sessionId: 's', reason: 'bye', timestamp: 1_700_000_000_123 });
  });

  it("answer auth with the spec's success and failure shapes", () => {
    expect(Envelope.authenticated('s', { name: 'n', version: '1.0.0' }, 30000)).toEqual({
      type: 'auth',
      sessionId: 's',
      status: 'authenticated',
      serverInfo: { name: 'n', version: '1.0.0' },
      heartbeatInterval: 30000,
      timestamp: 1_700_000_000_123,
    });
    expect(Envelope.authFailed('Invalid authentication token')).toEqual({
      type: 'auth',
      status: 'failed',
      error: { code: 401, message: 'Invalid authentication token' },
      timestamp: 1_700_000_000_123,
    });
  });

  it("carry an error's code, message and data, with the sessionId once there is one", () => {
    const error = new EnvelopeError(-32700, 'Parse error', 'Unexpected end of JSON input');
    expect(Envelope.error(error, 's')).toEqual({
      type: 'error',
      sessionId: 's',
      error: { code: -32700, message: 'Parse error', data: 'Unexpected end of JSON input' },
      timestamp: 1_700_000_000_123,
    });
    expect(Envelope.error(new EnvelopeError(401, 'Not authenticated'))).toEqual({
      type: 'error',
      error: { code: 401, message: 'Not authenticated', data: null },
      timestamp: 1_700_000_000_123,
    });
  });
});
