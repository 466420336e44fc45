import { ErrorCode, JSONRPCMessage, RequestId } from '@modelcontextprotocol/sdk/types.js';
import { ModernMcpEndpoint, modernEnvelopeOf } from '../http/modern-mcp-endpoint';
import { jsonRpcError, RATE_LIMITED_ERROR } from '../mcp.errors';

/**
 * The 2026-07-28 messages of one MCP WebSocket connection: each message that carries the
 * revision's `_meta` envelope is answered by the 2026 endpoint, as a POST would be, and every
 * message of its answer goes back as a frame; a `notifications/cancelled` naming one stops it
 * (a `subscriptions/listen` runs until then, or until the connection ends). Other messages are
 * the connection's 2025 session's. At most `maxInFlight` run at once.
 */
export class ModernSocketRequests {
  private readonly running = new Map<RequestId, AbortController>();

  constructor(
    private readonly endpoint: ModernMcpEndpoint,
    private readonly principal: string,
    private readonly maxInFlight: number,
    private readonly send: (message: JSONRPCMessage) => void,
  ) {}

  /** Whether `message` is this connection's 2026 traffic, now answered (or refused) here. */
  take(message: JSONRPCMessage): boolean {
    if ('method' in message && message.method === 'notifications/cancelled') {
      const stop = this.running.get((message.params as { requestId?: RequestId } | undefined)?.requestId ?? '');
      stop?.abort();
      return stop !== undefined;
    }
    if (!('method' in message) || modernEnvelopeOf(message) === undefined) return false;
    const id = 'id' in message ? message.id : undefined;
    if (id !== undefined && this.running.size >= this.maxInFlight) {
      this.send(
        jsonRpcError(
          id,
          RATE_LIMITED_ERROR,
          `Too many requests in flight on this connection: at most ${this.maxInFlight} (WS_MAX_CALLS_IN_FLIGHT)`,
        ) as JSONRPCMessage,
      );
      return true;
    }
    const stop = new AbortController();
    if (id !== undefined) this.running.set(id, stop);
    void this.relay(message, stop.signal).finally(() => id !== undefined && this.running.get(id) === stop && this.running.delete(id));
    return true;
  }

  stopAll(): void {
    for (const stop of this.running.values()) stop.abort();
    this.running.clear();
  }

  private async relay(message: JSONRPCMessage & { method: string }, signal: AbortSignal): Promise<void> {
    try {
      for await (const answer of this.endpoint.answer(message, this.principal, signal)) this.send(answer);
    } catch (error) {
      const id = (message as { id?: RequestId }).id;
      if (signal.aborted || id === undefined) return;
      this.send(jsonRpcError(id, ErrorCode.InternalError, `The request could not be answered: ${(error as Error).message}`) as JSONRPCMessage);
    }
  }
}
