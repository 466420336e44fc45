import { CallHandler, ExecutionContext, Injectable, NestInterceptor, UseInterceptors } from '@nestjs/common';
import { interval, map, Observable, take } from 'rxjs';
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
  } as FrameConnection;
  return { connection, sent };
}

describe('FrameDispatcher', () => {
  const dispatcher = new FrameDispatcher(new TestGateway(), 100);

  it('routes a frame by its type to its handler and sends the answer', () => {
    const { connection, sent } = connect();
    dispatcher.dispatch(connection, '{"type":"echo","text":"hi"}');
    expect(sent).toEqual([{ echoed: 'hi' }]);
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
  ])("refuses a frame %s through the protocol's error mapping", (_name, text, kind, message, frame) => {
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

  it("routes by the connection's subprotocol", () => {
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

  describe('Nest interceptors a handler or its class declares', () => {
    /** Stamps every answer with who saw it on the way out, and what the handler was. */
    @Injectable()
    class Stamp implements NestInterceptor {
      constructor(private readonly mark: string) {}
      intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
        const { type } = context.switchToWs().getData<{ type: string }>();
        const client = context.switchToWs().getClient<FrameConnection>();
        return next.handle().pipe(map((answer) => ({ ...(answer as object), [this.mark]: `${type}@${client.id}:${context.getHandler().name}` })));
      }
    }
    class Outer extends Stamp {
      constructor() {
        super('outer');
      }
    }
    class Inner extends Stamp {
      constructor() {
        super('inner');
      }
    }

    @UseInterceptors(Outer)
    class Intercepted implements ProtocolGatewayHooks {
      @OnFrame('plain')
      plain() {
        return { plain: true };
      }

      @OnFrame('own')
      @UseInterceptors(Inner)
      own() {
        return Promise.resolve({ own: true });
      }

      /** A stream of answers, each sent as it comes. */
      @OnFrame('ticks')
      ticks() {
        return interval(1).pipe(
          take(3),
          map((tick) => ({ tick })),
        );
      }

      @OnFrame('fails')
      @UseInterceptors(Inner)
      fails() {
        throw new Error('inside');
      }

      onFrameError(error: unknown) {
        return { error: (error as Error).message };
      }
    }

    const intercepted = new FrameDispatcher(new Intercepted(), undefined, undefined, (type) => new type());

    it("runs the class's interceptors around every handler and a handler's own inside them, with the frame and the connection", async () => {
      const { connection, sent } = connect();
      await intercepted.dispatch(connection, '{"type":"plain"}');
      await intercepted.dispatch(connection, '{"type":"own"}');
      expect(sent).toEqual([
        { plain: true, outer: 'plain@c1:plain' },
        { own: true, inner: 'own@c1:own', outer: 'own@c1:own' },
      ]);
    });

    it('sends each frame of an Observable answer as it comes', async () => {
      const { connection, sent } = connect();
      await intercepted.dispatch(connection, '{"type":"ticks"}');
      expect(sent).toEqual([0, 1, 2].map((tick) => ({ tick, outer: 'ticks@c1:ticks' })));
    });

    it('hands what a handler throws under interceptors to the error mapping', async () => {
      const { connection, sent } = connect();
      await intercepted.dispatch(connection, '{"type":"fails"}');
      expect(sent).toEqual([{ error: 'inside' }]);
    });
  });

  describe('serial handlers', () => {
    class Serial implements ProtocolGatewayHooks {
      readonly order: string[] = [];

      @OnFrame('slow', { serial: true })
      async slow(frame: { n: number }) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        this.order.push(`slow ${frame.n}`);
        return { slow: frame.n };
      }

      @OnFrame('fast', { serial: true })
      fast(frame: { n: number }) {
        this.order.push(`fast ${frame.n}`);
        return { fast: frame.n };
      }

      @OnFrame('now')
      now() {
        this.order.push('now');
        return { now: true };
      }

      onFrameError(error: unknown) {
        return { error: (error as Error).message };
      }
    }

    it('runs them one at a time in arrival order, and the others at once', async () => {
      const gateway = new Serial();
      const serial = new FrameDispatcher(gateway);
      const { connection, sent } = connect();
      const { SerialQueue } = await import('./serial-queue');
      const queue = new SerialQueue(1);
      connection.queue = () => queue;
      const answers = [serial.dispatch(connection, '{"type":"slow","n":1}'), serial.dispatch(connection, '{"type":"fast","n":2}')];
      serial.dispatch(connection, '{"type":"now"}');
      serial.dispatch(connection, '{"type":"fast","n":3}');
      await Promise.all(answers);
      expect(gateway.order).toEqual(['now', 'slow 1', 'fast 2']);
      expect(sent).toEqual([{ now: true }, { error: 'Too many requests waiting: at most 1, wait for the answers' }, { slow: 1 }, { fast: 2 }]);
    });
  });
});
