import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { IncomingMessage, ServerResponse } from 'http';

/**
 * This instance's copy of one Streamable HTTP session: its SDK server and transport, who owns
 * it, and how many of its requests (an SSE stream counts until it ends) are still open; the copy
 * is dropped after `idleTimeoutMs` with none open.
 */
export class HttpSession {
  private open = 0;
  private idleTimer?: NodeJS.Timeout;
  private closed = false;

  constructor(
    readonly sessionId: string,
    readonly principal: string,
    readonly transport: StreamableHTTPServerTransport,
    private readonly server: Server,
    private readonly idleTimeoutMs: number,
    onClosed: () => void,
  ) {
    transport.onclose = () => {
      this.closed = true;
      clearTimeout(this.idleTimer);
      onClosed();
    };
    void server.connect(transport);
    this.idleAfterLastRequest();
  }

  /** Whether a request or stream of the session is open here now. */
  get busy(): boolean {
    return this.open > 0;
  }

  /** Counts a request open until its response closes: the session does not idle out meanwhile. */
  hold(response: ServerResponse): void {
    this.open += 1;
    clearTimeout(this.idleTimer);
    response.once('close', () => {
      this.open -= 1;
      this.idleAfterLastRequest();
    });
  }

  /**
   * Hands a request {@link hold held} open to the SDK's transport. The requests its body carries
   * are cancelled when its response closes before it was written to its end (its client went
   * away, or was cut off for not reading): the SDK drops such a stream but lets its handlers run
   * on, so the session is told, as the client's own `notifications/cancelled` would tell it.
   */
  handle(request: IncomingMessage, response: ServerResponse, body: unknown): Promise<void> {
    const carried = requestIdsOf(body);
    if (carried.length > 0) {
      response.once('close', () => {
        if (!response.writableFinished) for (const requestId of carried) this.cancel(requestId);
      });
    }
    return this.transport.handleRequest(request, response, body);
  }

  /** Closes the SDK server, which closes the transport and ends its open streams. */
  close(): Promise<void> {
    return this.server.close();
  }

  private cancel(requestId: string | number): void {
    this.transport.onmessage?.({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason: 'The client went away' } });
  }

  private idleAfterLastRequest(): void {
    if (this.open === 0 && !this.closed) this.idleTimer = setTimeout(() => void this.close(), this.idleTimeoutMs);
  }
}

/** The ids of the JSON-RPC requests in a POST body (one message or a batch). */
function requestIdsOf(body: unknown): (string | number)[] {
  const messages: unknown[] = Array.isArray(body) ? body : [body];
  return messages.flatMap((message) => {
    const { id, method } = (message ?? {}) as { id?: unknown; method?: unknown };
    return typeof method === 'string' && (typeof id === 'string' || typeof id === 'number') ? [id] : [];
  });
}
