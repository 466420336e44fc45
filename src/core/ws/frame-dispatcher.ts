import { Logger } from '@nestjs/common';
import { isPromise } from '../maybe-promise';
import { compileFrameSchema, FrameCheck } from '../validation/frame-schema';
import type { FrameConnection } from './connection';
import { FrameEvent, MalformedFrame, OversizedFrame, parseFrame, ParsedFrame } from './frame-parser';
import { FrameRejection } from './frame-rejection';
import { frameHandlersOf } from './on-frame.decorator';
import type { AnyProtocolGateway, ProtocolGatewayHooks } from './protocol-gateway.decorator';

interface FrameRoute {
  run: (frame: unknown, connection: FrameConnection) => unknown;
  check?: FrameCheck;
  beforeAuth: boolean;
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
  types.length <= 1 ? types.map((type) => `"${type}"`).join('') : `${types.slice(0, -1).map((t) => `"${t}"`).join(', ')} or "${types.at(-1)}"`;

/** Longest `type` a refusal repeats: enough to recognise a typo, too short for a large frame to be echoed whole. */
export const ECHOED_TYPE_MAX_LENGTH = 64;

const echoedType = (type: string): string => (type.length <= ECHOED_TYPE_MAX_LENGTH ? type : `${type.slice(0, ECHOED_TYPE_MAX_LENGTH)}…`);

/** What the client sent, as far as it could be read: nothing for a malformed or oversized frame. */
const clientFrameOf = (frame: ParsedFrame): unknown =>
  frame.event === FrameEvent.MALFORMED || frame.event === FrameEvent.TOO_LARGE ? undefined : frame.data;

/**
 * The one path from a received frame to its protocol's handler, the same for every protocol:
 * parse (with the route's size limit) -> the handler for the frame's `type` (per subprotocol)
 * -> authenticated, unless the handler runs before auth (anything else on an unauthenticated
 * connection, unreadable frames included, is refused as such) -> the handler's compiled schema
 * -> the handler -> its answer sent. Whatever fails on the way, a refusal ({@link FrameRejection}), an
 * invalid frame or an exception, goes to the gateway's `onFrameError`, which words it in the
 * protocol's vocabulary; the connection stays usable unless the protocol closes it.
 *
 * Frames the protocol has no handler for get a refusal: malformed, untyped, of an unknown type,
 * too large. A gateway may handle any of these itself with `@OnFrame(FrameEvent.X)`.
 *
 * Nothing per frame is built beyond the parsed value and the answer: no promise unless the
 * handler returns one, no observable, no context object.
 */
export class FrameDispatcher {
  private readonly logger = new Logger('WebSocket');
  private readonly tables = new Map<string, FrameTable>();
  private readonly gateway: ProtocolGatewayHooks;

  constructor(
    gateway: AnyProtocolGateway,
    /** Bytes over which a frame is answered `too-large` rather than handled; none when the socket closes on them. */
    private readonly softLimitBytes?: number,
    private readonly observer?: FrameObserver,
  ) {
    this.gateway = gateway as ProtocolGatewayHooks;
    for (const handler of frameHandlersOf(gateway)) {
      const method = (gateway as unknown as Record<string | symbol, unknown>)[handler.method];
      if (typeof method !== 'function') throw new Error(`@OnFrame("${handler.type}") is not on a method of ${gateway.constructor.name}`);
      const subprotocol = handler.subprotocol ?? '';
      let table = this.tables.get(subprotocol);
      if (!table) this.tables.set(subprotocol, (table = new Map()));
      if (table.has(handler.type)) throw new Error(`${gateway.constructor.name} handles "${handler.type}" twice`);
      table.set(handler.type, {
        run: method.bind(gateway) as FrameRoute['run'],
        check: handler.schema && compileFrameSchema(handler.schema),
        beforeAuth: handler.beforeAuth ?? false,
      });
    }
  }

  /**
   * Handles one frame as it came off the wire; returns a promise when its answer is not sent
   * yet (an asynchronous handler), for a transport that waits for every answer.
   */
  dispatch(connection: FrameConnection, raw: Buffer | string): Promise<void> | undefined {
    connection.markAlive();
    const frame = parseFrame(raw, this.softLimitBytes);
    const table = this.tables.get(connection.subprotocol) ?? this.tables.get('');
    const route = table?.get(frame.event) ?? (frame.event.startsWith('#') ? undefined : table?.get(FrameEvent.UNKNOWN_TYPE));
    try {
      if (connection.principal === undefined && !route?.beforeAuth) throw new FrameRejection('unauthenticated', 'Not authenticated');
      if (!route) throw this.refusal(frame, table);
      const problem = route.check?.(frame.data);
      if (problem !== undefined) throw new FrameRejection('invalid', problem);
      const answer = route.run(frame.data, connection);
      if (isPromise(answer)) {
        return answer.then(
          (settled) => {
            this.answer(connection, settled);
            this.observer?.answered();
          },
          (error: unknown) => this.fail(connection, frame.data, error),
        );
      }
      this.answer(connection, answer);
      this.observer?.answered();
    } catch (error) {
      this.fail(connection, clientFrameOf(frame), error);
    }
    return undefined;
  }

  /** Refuses what never became a frame (input too large for the transport to read), in the protocol's words. */
  refuse(connection: FrameConnection, rejection: FrameRejection): void {
    this.fail(connection, undefined, rejection);
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
