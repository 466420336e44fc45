import type { FrameConnection } from './connection';
import { FrameDispatcher } from './frame-dispatcher';
import { FrameEvent } from './frame-parser';
import { FrameRejection } from './frame-rejection';
import { OnFrame } from './on-frame.decorator';
import type { ProtocolGatewayHooks } from './protocol-gateway.decorator';

const echoSchema = {
  type: 'object',
  properties: { type: { const: 'echo' }, text: { type: 'string', errorMessage: 'text must be a string' }, data: {} },
  required: ['type', 'text'],
} as const;

/** A protocol with a handler of each kind; its errors are answered as `{error: {kind, message, frame}}`. */
class TestGateway implements ProtocolGatewayHooks {
  @OnFrame('echo', { schema: echoSchema })
  echo(frame: { text: string }) {
    return { echoed: frame.text };
  }

  @OnFrame('later')
  later(frame: { text: string }) {
    return Promise.resolve({ later: frame.text });
  }

  @OnFrame('quiet')
  quiet(): void {}

  @OnFrame('boom')
  boom(): never {
    throw new Error('handler failed');
  }

  @OnFrame('login', { beforeAuth: true })
  login(_frame: unknown, connection: FrameConnection) {
    connection.principal = 'someone';
    return { welcome: true };
  }

  @OnFrame(FrameEvent.UNTYPED, { subprotocol: 'raw' })
  raw(value: unknown) {
    return { raw: value };
  }

  onFrameError(error: unknown, frame: unknown) {
    const kind = error instanceof FrameRejection ? error.reason : 'thrown';
    return { error: { kind, message: (error as Error).message }, frame: frame ?? null };
  }
}

function connect(options: { principal?: string; subprotocol?: string } = {}) {
  const sent: unknown[] = [];
  const connection = {
    id: 'c1',
    protocol: 'test',
    params: {},
    subprotocol: options.subprotocol ?? '',
    principal: 'principal' in options ? options.principal : 'tester',
    state: undefined,
    send: (frame: unknown) => sent.push(frame) > 0,
    markAlive: jest.fn(),
  } as FrameConnection;
  return { connection, sent };
}

describe('FrameDispatcher', () => {
  const dispatcher = new FrameDispatcher(new TestGateway(), 100);

  it('routes a frame by its type to its handler and sends the answer', () => {
    const { connection, sent } = connect();
    dispatcher.dispatch(connection, '{"type":"echo","text":"hi"}');
    expect(sent).toEqual([{ echoed: 'hi' }]);
    expect(connection.markAlive).toHaveBeenCalled();
  });

  it('sends a later answer when it comes, and tells when it was sent', async () => {
    const { connection, sent } = connect();
    const answered = dispatcher.dispatch(connection, Buffer.from('{"type":"later","text":"x"}'));
    expect(sent).toEqual([]);
    await answered;
    expect(sent).toEqual([{ later: 'x' }]);
  });

  it('sends nothing for a handler that answers nothing', () => {
    const { connection, sent } = connect();
    expect(dispatcher.dispatch(connection, '{"type":"quiet"}')).toBeUndefined();
    expect(sent).toEqual([]);
  });

  it.each([
    ['not JSON', '{"type":', 'malformed', /^Invalid JSON/, null],
    ['not an object with a type', '[1,2]', 'untyped', /JSON object with a string "type"/, [1, 2]],
    ['of an unknown type', '{"type":"nope","id":4}', 'unknown-type', /"nope": expected "echo", "later", "quiet", "boom" or "login"/, { type: 'nope', id: 4 }],
    ['over the size limit', JSON.stringify({ type: 'echo', text: 'x'.repeat(200) }), 'too-large', /over the 100-byte limit/, null],
    ['against its schema', '{"type":"echo","text":5}', 'invalid', /^text must be a string$/, { type: 'echo', text: 5 }],
  ])('refuses a frame %s through the protocol\'s error mapping', (_name, text, kind, message, frame) => {
    const { connection, sent } = connect();
    dispatcher.dispatch(connection, text);
    expect(sent).toEqual([{ error: { kind, message: expect.stringMatching(message) }, frame }]);
  });

  it('refuses a frame nested deeper than the bound, without recursion and without an internal error', () => {
    const { connection, sent } = connect();
    const deep = `{"type":"echo","text":"hi","data":${'['.repeat(10_000)}${']'.repeat(10_000)}}`;
    new FrameDispatcher(new TestGateway()).dispatch(connection, deep);
    expect(sent).toHaveLength(1);
    expect((sent[0] as { error: unknown }).error).toEqual({ kind: 'invalid', message: expect.stringMatching(/nests deeper than 64 levels/) });
  });

  it('hands what a handler throws to the error mapping, with the frame', () => {
    const { connection, sent } = connect();
    dispatcher.dispatch(connection, '{"type":"boom","id":1}');
    expect(sent).toEqual([{ error: { kind: 'thrown', message: 'handler failed' }, frame: { type: 'boom', id: 1 } }]);
  });

  it('serves an unauthenticated connection only its auth handler; everything else is refused as such', () => {
    const { connection, sent } = connect({ principal: undefined });
    dispatcher.dispatch(connection, '{"type":"echo","text":"hi"}');
    dispatcher.dispatch(connection, 'not json');
    dispatcher.dispatch(connection, '{"type":"login"}');
    dispatcher.dispatch(connection, '{"type":"echo","text":"hi"}');
    expect(sent).toEqual([
      { error: { kind: 'unauthenticated', message: 'Not authenticated' }, frame: { type: 'echo', text: 'hi' } },
      { error: { kind: 'unauthenticated', message: 'Not authenticated' }, frame: null },
      { welcome: true },
      { echoed: 'hi' },
    ]);
  });

  it('routes by the connection\'s subprotocol', () => {
    const { connection, sent } = connect({ subprotocol: 'raw' });
    dispatcher.dispatch(connection, '[1]');
    dispatcher.dispatch(connection, '{"type":"echo","text":"hi"}');
    expect(sent).toEqual([{ raw: [1] }, { error: expect.objectContaining({ kind: 'unknown-type' }), frame: expect.anything() }]);
  });

  it('refuses a gateway that handles a type twice', () => {
    class Twice implements ProtocolGatewayHooks {
      @OnFrame('a') one(): void {}
      @OnFrame('a') two(): void {}
      onFrameError(): void {}
    }
    expect(() => new FrameDispatcher(new Twice())).toThrow(/handles "a" twice/);
  });
});
