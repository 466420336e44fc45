import { Logger, NestInterceptor, Type } from '@nestjs/common';
import { INTERCEPTORS_METADATA } from '@nestjs/common/constants';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host';
import { defer, from, isObservable, mergeAll, Observable, of, Subscription } from 'rxjs';
import { isPromise } from '../maybe-promise';
import { compileFrameSchema, FrameCheck } from '../validation/frame-schema';
import type { FrameConnection, GatewayConnection } from './connection';
import { FrameEvent, MalformedFrame, OversizedFrame, parseFrame, ParsedFrame } from './frame-parser';
import { FrameRejection } from './frame-rejection';
import { frameHandlersOf } from './on-frame.decorator';
import type { AnyProtocolGateway, ProtocolGatewayHooks } from './protocol-gateway.decorator';

/** Makes the interceptors a gateway declares (from the app's DI container, as Nest does). */
export type InterceptorResolver = (type: Type<NestInterceptor>) => NestInterceptor;

interface FrameRoute {
  run: (frame: unknown, connection: FrameConnection) => unknown;
  check?: FrameCheck;
  beforeAuth: boolean;
  serial: boolean;
  /** The Nest interceptors the handler runs through: its class's, then its own; none for most. */
  interceptors: NestInterceptor[];
  method: (...args: never[]) => unknown;
}

/**
 * Hears how each frame ended (the metrics count them), bound to one route when the dispatcher
 * is made, so a frame costs one call and no lookup.
 */
export interface FrameObserver {
  answered(): void;
  failed(error: unknown): void;
}

/** One subprotocol's handlers, by frame `type` or `FrameEvent`. */
type FrameTable = Map<string, FrameRoute>;

const listTypes = (types: string[]) =>
  types.length <= 1
    ? types.map((type) => `"${type}"`).join('')
    : `${types
        .slice(0, -1)
        .map((t) => `"${t}"`)
        .join(', ')} or "${types.at(-1)}"`;

/** Longest `type` a refusal repeats: enough to recognise a typo, too short for a large frame to be echoed whole. */
export const ECHOED_TYPE_MAX_LENGTH = 64;

const echoedType = (type: string): string => (type.length <= ECHOED_TYPE_MAX_LENGTH ? type : `${type.slice(0, ECHOED_TYPE_MAX_LENGTH)}…`);

/** What the client sent, as far as it could be read: nothing for a malformed or oversized frame. */
const clientFrameOf = (frame: ParsedFrame): unknown => (frame.event === FrameEvent.MALFORMED || frame.event === FrameEvent.TOO_LARGE ? undefined : frame.data);

const interceptorTypesOf = (target: object): Type<NestInterceptor>[] => Reflect.getMetadata(INTERCEPTORS_METADATA, target) ?? [];

/**
 * The one path from a received frame to its protocol's handler, the same for every protocol:
 * parse (with the route's size limit) -> the handler for the frame's `type` (per subprotocol)
 * -> authenticated, unless the handler runs before auth (anything else on an unauthenticated
 * connection, unreadable frames included, is refused as such) -> the handler's compiled schema
 * -> the handler, in the connection's serial queue when it is marked `serial`, through the Nest
 * interceptors its class or itself declares (`@UseInterceptors`) -> its answer sent. Whatever
 * fails on the way, a refusal ({@link FrameRejection}), an invalid frame or an exception, goes
 * to the gateway's `onFrameError`, which words it in the protocol's vocabulary; the connection
 * stays usable unless the protocol closes it.
 *
 * A handler answers with a frame, a promise of one, nothing, or an Observable of frames, each
 * sent as it comes (a voice turn's answers); the Observable is unsubscribed when the connection
 * closes. Frames the protocol has no handler for get a refusal: malformed, untyped, of an
 * unknown type, too large. A gateway may handle any of these itself with `@OnFrame(FrameEvent.X)`.
 *
 * A handler that declares no interceptor and is not serial costs nothing beyond the parsed value
 * and the answer: no promise unless it returns one, no observable, no execution context.
 */
export class FrameDispatcher {
  private readonly logger = new Logger('WebSocket');
  private readonly tables = new Map<string, FrameTable>();
  private readonly gateway: ProtocolGatewayHooks;
  private readonly openInterceptors: NestInterceptor[];

  constructor(
    gateway: AnyProtocolGateway,
    /** Bytes over which a frame is answered `too-large` rather than handled; none when the socket closes on them. */
    private readonly softLimitBytes?: number,
    private readonly observer?: FrameObserver,
    resolveInterceptor: InterceptorResolver = (type) => new type(),
  ) {
    this.gateway = gateway as ProtocolGatewayHooks;
    const methods = gateway as unknown as Record<string | symbol, (...args: never[]) => unknown>;
    const classInterceptors = interceptorTypesOf(gateway.constructor);
    const interceptorsOf = (method: object) => [...classInterceptors, ...interceptorTypesOf(method)].map(resolveInterceptor);
    this.openInterceptors = this.gateway.onOpen ? interceptorsOf(this.gateway.onOpen) : [];
    for (const handler of frameHandlersOf(gateway)) {
      const method = methods[handler.method];
      if (typeof method !== 'function') throw new Error(`@OnFrame("${handler.type}") is not on a method of ${gateway.constructor.name}`);
      const subprotocol = handler.subprotocol ?? '';
      let table = this.tables.get(subprotocol);
      if (!table) this.tables.set(subprotocol, (table = new Map()));
      if (table.has(handler.type)) throw new Error(`${gateway.constructor.name} handles "${handler.type}" twice`);
      table.set(handler.type, {
        run: method.bind(gateway) as FrameRoute['run'],
        check: handler.schema && compileFrameSchema(handler.schema),
        beforeAuth: handler.beforeAuth ?? false,
        serial: handler.serial ?? false,
        interceptors: interceptorsOf(method),
        method,
      });
    }
  }

  /**
   * A connection was accepted: the gateway's `onOpen`, through its interceptors (the route's
   * heartbeat among them). A failure is the caller's to report.
   */
  open(connection: GatewayConnection): void {
    const onOpen = this.gateway.onOpen!.bind(this.gateway);
    if (this.openInterceptors.length === 0) return onOpen(connection);
    const context = this.contextOf(connection, undefined, this.gateway.onOpen!);
    this.intercepted(this.openInterceptors, context, () => onOpen(connection)).subscribe({
      error: (error: unknown) => this.logger.error(`${connection.protocol} connection setup failed: ${(error as Error)?.stack ?? error}`),
    });
  }

  /**
   * Handles one frame as it came off the wire; returns a promise when its answer is not sent
   * yet (an asynchronous handler), for a transport that waits for every answer.
   */
  dispatch(connection: FrameConnection, raw: Buffer | string): Promise<void> | undefined {
    const frame = parseFrame(raw, this.softLimitBytes);
    const table = this.tables.get(connection.subprotocol) ?? this.tables.get('');
    const route = table?.get(frame.event) ?? (frame.event.startsWith('#') ? undefined : table?.get(FrameEvent.UNKNOWN_TYPE));
    try {
      if (connection.principal === undefined && !route?.beforeAuth) {
        // A frame pipelined behind an auth frame still being checked (a JWT whose keys may be
        // fetched) waits for it, then is handled as if it came after; the unauthenticated byte
        // bound limits how many can wait.
        const { authenticating } = connection;
        if (authenticating) return authenticating.then(() => this.dispatch(connection, raw));
        throw new FrameRejection('unauthenticated', 'Not authenticated');
      }
      if (!route) throw this.refusal(frame, table);
      const problem = route.check?.(frame.data);
      if (problem !== undefined) throw new FrameRejection('invalid', problem);
      if (route.serial) return this.serially(route, frame.data, connection);
      if (connection.principal === undefined) return this.whileAuthenticating(connection, this.handle(route, frame.data, connection));
      return this.handle(route, frame.data, connection);
    } catch (error) {
      this.fail(connection, clientFrameOf(frame), error);
    }
    return undefined;
  }

  /** A frame handled before authentication that answers later (an auth frame being checked): the frames behind it wait until it has answered. */
  private whileAuthenticating(connection: FrameConnection, answered: Promise<void> | undefined): Promise<void> | undefined {
    if (!answered) return undefined;
    const settled: Promise<void> = answered.finally(() => {
      if (connection.authenticating === settled) connection.authenticating = undefined;
    });
    connection.authenticating = settled;
    return settled;
  }

  /** Refuses what never became a frame (input too large for the transport to read), in the protocol's words. */
  refuse(connection: FrameConnection, rejection: FrameRejection): void {
    this.fail(connection, undefined, rejection);
  }

  /** Runs the handler and sends its answer: at once when it has one, later for a promise or an Observable. */
  private handle(route: FrameRoute, data: unknown, connection: FrameConnection): Promise<void> | undefined {
    const answer =
      route.interceptors.length === 0
        ? route.run(data, connection)
        : this.intercepted(route.interceptors, this.contextOf(connection, data, route.method), () => route.run(data, connection));
    if (isObservable(answer)) return this.stream(answer, data, connection);
    if (isPromise(answer)) {
      return answer.then(
        (settled) => {
          this.answer(connection, settled);
          this.observer?.answered();
        },
        (error: unknown) => this.fail(connection, data, error),
      );
    }
    this.answer(connection, answer);
    this.observer?.answered();
    return undefined;
  }

  /**
   * A `serial` handler, after the connection's earlier serial frames; its failure is answered in
   * its turn. A queue that is full refuses at once (its `QueueFullError`), unless the route
   * pauses reading instead.
   */
  private serially(route: FrameRoute, data: unknown, connection: FrameConnection): Promise<void> | undefined {
    const queue = connection.queue?.();
    if (!queue) return this.handle(route, data, connection);
    return queue
      .run(() => (connection.isOpen === false ? undefined : this.handle(route, data, connection)))
      .catch((error: unknown) => this.fail(connection, data, error));
  }

  /** Sends each frame of `answers` as it comes; resolves when it completes (or the connection closes). */
  private stream(answers: Observable<unknown>, data: unknown, connection: FrameConnection): Promise<void> {
    return new Promise((resolve) => {
      let stopWithConnection: (() => void) | undefined;
      const finish = () => {
        stopWithConnection?.();
        resolve();
      };
      const subscription: Subscription = answers.subscribe({
        next: (frame) => {
          connection.batchThisTick?.();
          this.answer(connection, frame);
        },
        error: (error: unknown) => {
          this.fail(connection, data, error);
          finish();
        },
        complete: () => {
          this.observer?.answered();
          finish();
        },
      });
      if (!subscription.closed) {
        stopWithConnection = connection.onClose?.(() => {
          subscription.unsubscribe();
          resolve();
        });
      }
    });
  }

  /** Runs `handler` through `interceptors`, the first outermost, as Nest runs a controller's. */
  private intercepted(interceptors: NestInterceptor[], context: ExecutionContextHost, handler: () => unknown): Observable<unknown> {
    const answer$ = (): Observable<unknown> =>
      defer(() => {
        const answer = handler();
        return isObservable(answer) ? answer : isPromise(answer) ? from(answer) : of(answer);
      });
    return interceptors.reduceRight<() => Observable<unknown>>(
      (next, interceptor) => () =>
        defer(() => {
          // Synchronous when the interceptor is, so a handler runs while its frame is dispatched (a cancel right behind it finds it).
          const intercepted = interceptor.intercept(context, { handle: next });
          return isObservable(intercepted) ? intercepted : from(intercepted).pipe(mergeAll());
        }),
      answer$,
    )();
  }

  private contextOf(connection: FrameConnection, data: unknown, handler: (...args: never[]) => unknown): ExecutionContextHost {
    const context = new ExecutionContextHost([connection, data], this.gateway.constructor as Type<unknown>, handler);
    context.setType('ws');
    return context;
  }

  private answer(connection: FrameConnection, answer: unknown): void {
    if (answer !== undefined && answer !== null) connection.send(answer);
  }

  private fail(connection: FrameConnection, frame: unknown, error: unknown): void {
    this.observer?.failed(error);
    let answer: unknown;
    try {
      answer = this.gateway.onFrameError(error, frame, connection);
    } catch (mappingError) {
      this.logger.error(`Error mapping of ${connection.protocol} failed: ${(mappingError as Error)?.stack ?? mappingError}`);
      return;
    }
    this.answer(connection, answer);
  }

  /** Why a frame has no handler, in words every protocol can pass on. */
  private refusal(frame: ParsedFrame, table: FrameTable | undefined): FrameRejection {
    switch (frame.event) {
      case FrameEvent.MALFORMED:
        return new FrameRejection('malformed', (frame.data as MalformedFrame).reason);
      case FrameEvent.TOO_LARGE: {
        const { bytes, limit } = frame.data as OversizedFrame;
        return new FrameRejection('too-large', `Message of ${bytes} bytes is over the ${limit}-byte limit`);
      }
      case FrameEvent.UNTYPED:
        return new FrameRejection('untyped', 'A message must be a JSON object with a string "type"');
      default: {
        const known = [...(table?.keys() ?? [])].filter((type) => !type.startsWith('#'));
        const type = echoedType((frame.data as { type: string }).type);
        return new FrameRejection('unknown-type', `Unknown message type ${JSON.stringify(type)}: expected ${listTypes(known)}`, type);
      }
    }
  }
}
