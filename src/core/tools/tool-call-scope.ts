import type { ServerResponse } from 'http';
import type { AuthenticatedRequest } from '../auth/bearer-auth.guard';
import type { CallsInFlight } from '../limits/calls-in-flight';
import type { FrameConnection } from '../ws/connection';
import type { ToolAudience } from './tool-definition';
import type { InvokeOptions } from './tool-invoker';

/**
 * What a scope is made from: a WebSocket connection, LiteMCP's stdio connection, or an MCP
 * Streamable HTTP session (MCP's connection over HTTP, with calls in flight of its own).
 */
export type ToolCallOrigin = Pick<FrameConnection, 'id' | 'protocol' | 'principal' | 'signal' | 'callsInFlight'>;

/** The turn an LLM-gateway tool call belongs to, and the signal that stops its round. */
export interface ToolCallTurn {
  sessionId: string;
  turnId: string;
  signal: AbortSignal;
}

/**
 * Everything around one tool call but the tool and its arguments, decided once, in core, for
 * every protocol: who calls (the principal, whose grant the catalogue applies to every lookup),
 * on which connection, by which protocol, until when (the signal), within which bounds (a place
 * among the connection's calls in flight; the token's `tool_calls_per_minute`), and for the LLM
 * gateway which session and turn. `ToolCallService` runs calls within it.
 *
 * Made only by the factories here, so every scope has the same fields in the same order (one
 * shape on the hot path) and no protocol assembles one by hand. It is the invoker's
 * {@link InvokeOptions} as it is: running a call within a scope copies nothing.
 */
export class ToolCallScope implements InvokeOptions {
  private constructor(
    /** The protocol the call came by (`mcp`, `litemcp`, `utcp`, `llm`), for the metrics, the audit log and traces. */
    readonly protocol: string,
    /** The authenticated caller; the catalogue shows and runs only what its grant allows. */
    readonly principal: string | undefined,
    /** The connection the call came on: its own client tools are visible, and the handler is told. */
    readonly connectionId: string | undefined,
    /** Stops the call: its connection closed, its HTTP client went away, its request or round was cancelled. */
    readonly signal: AbortSignal | undefined,
    /** The connection's bound on calls running at once; the call holds a place until it settles. */
    readonly callsInFlight: CallsInFlight | undefined,
    /**
     * Whether each call counts against the token's `tool_calls_per_minute`; not those the model
     * makes in an LLM-gateway turn, which was counted as a turn (`turns_per_minute`).
     */
    readonly rateLimited: boolean,
    readonly sessionId: string | undefined,
    readonly turnId: string | undefined,
    /** A turn's model sees its connection's tools; every other caller is an agent, and sees its devices' tools too. */
    readonly audience: ToolAudience,
  ) {}

  /**
   * Calls a client makes on a connection: stopped when the connection closes, each holding a
   * place among its calls in flight, counted against the token's rate limit. Made when the call
   * comes, so a principal that an auth frame settled later is the one used.
   */
  static ofConnection(connection: ToolCallOrigin): ToolCallScope {
    const { protocol, principal, id, signal, callsInFlight } = connection;
    return new ToolCallScope(protocol, principal, id, signal, callsInFlight, true, undefined, undefined, 'agent');
  }

  /**
   * A call a client makes by an HTTP request (`@UseGuards(BearerAuthGuard)` settled its
   * principal): counted against the token's rate limit, and stopped when the client goes away
   * (the response closes before it was finished). HTTP requests have no connection, so no calls
   * in flight to bound.
   */
  static ofRequest(protocol: string, request: AuthenticatedRequest, response: ServerResponse): ToolCallScope {
    const client = new AbortController();
    response.once('close', () => {
      if (!response.writableFinished) client.abort(new DOMException('The client went away', 'AbortError'));
    });
    return new ToolCallScope(protocol, request.principal, undefined, client.signal, undefined, true, undefined, undefined, 'agent');
  }

  /**
   * The calls the model makes in one round of an LLM-gateway turn on `connection`: stopped by
   * the round's signal, told their session and turn, and limited as the turn is (counted once,
   * by `turns_per_minute`), not one by one.
   */
  static ofTurn(connection: ToolCallOrigin, turn: ToolCallTurn): ToolCallScope {
    const { protocol, principal, id } = connection;
    return new ToolCallScope(protocol, principal, id, turn.signal, undefined, false, turn.sessionId, turn.turnId, 'model');
  }

  /**
   * A call another instance of the gateway asked this one to run (the fleet: a device's tool,
   * where the device's connection is): run through this instance's invoker in the caller's name,
   * so it is audited, metered and traced where it runs too, under `protocol` (the relay's own,
   * so the two instances' counts of the protocols clients used are not one call twice). The
   * asking instance counted it against the token's limits already; `signal` is its withdrawal.
   */
  static ofRelayed(protocol: string, principal: string | undefined, signal: AbortSignal): ToolCallScope {
    return new ToolCallScope(protocol, principal, undefined, signal, undefined, false, undefined, undefined, 'agent');
  }

  /**
   * This scope for one request that has a signal of its own (an MCP request, which the client may
   * cancel, and which the SDK aborts when its session closes): everything else stays.
   */
  withSignal(signal: AbortSignal): ToolCallScope {
    const { protocol, principal, connectionId, callsInFlight, rateLimited, sessionId, turnId, audience } = this;
    return new ToolCallScope(protocol, principal, connectionId, signal, callsInFlight, rateLimited, sessionId, turnId, audience);
  }
}
