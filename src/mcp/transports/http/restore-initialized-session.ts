import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { InitializeRequest } from '@modelcontextprotocol/sdk/types.js';

/** The SDK version whose internals {@link restoreInitializedSession} was written against (package.json pins it). */
export const SDK_VERSION_OF_RESTORE = '1.32.2';

/** What {@link restoreInitializedSession} touches inside the SDK's Streamable HTTP transport. */
interface TransportInternals {
  _webStandardTransport?: { sessionId?: string; _initialized?: unknown };
}

/** What it touches inside the SDK's `Server`. */
interface ServerInternals {
  _oninitialize?: (request: InitializeRequest) => Promise<unknown>;
}

/**
 * Puts a new SDK transport and server in the state an `initialize` exchange leaves them in, for
 * a session initialized on another instance: the transport answers to `sessionId` and takes
 * requests at once, and the server knows the client's capabilities and info (what it checks
 * before sending the client a request) from the `initialize` params recorded then.
 *
 * The SDK (@modelcontextprotocol/sdk 1.32.2) has no public way to do this (its pull requests
 * #1668 and #1786 proposed one and were closed), so this sets what `initialize` would have:
 * - the transport wraps a `WebStandardStreamableHTTPServerTransport` (`_webStandardTransport`),
 *   whose `sessionId` and `_initialized` are what `validateSession` checks on every request;
 * - the server's own `_oninitialize` records the client's capabilities and info (its answer,
 *   which the client had from the first instance, is dropped).
 * Each field is checked before it is set, and the result after, so an SDK that moved them makes
 * this throw (and its spec fail) instead of serving a half-restored session. Call it before the
 * server is connected to the transport and before any request reaches either.
 */
export async function restoreInitializedSession(
  transport: StreamableHTTPServerTransport,
  server: Server,
  sessionId: string,
  initialize: InitializeRequest['params'],
): Promise<void> {
  const inner = (transport as unknown as TransportInternals)._webStandardTransport;
  const oninitialize = (server as unknown as ServerInternals)._oninitialize;
  if (!inner || typeof inner._initialized !== 'boolean' || typeof oninitialize !== 'function') {
    throw new Error(
      `Cannot restore an MCP session: the SDK's internals are not those of @modelcontextprotocol/sdk ${SDK_VERSION_OF_RESTORE} (see restore-initialized-session.ts)`,
    );
  }
  inner.sessionId = sessionId;
  inner._initialized = true;
  await oninitialize.call(server, { method: 'initialize', params: initialize });
  if (transport.sessionId !== sessionId || server.getClientCapabilities() !== initialize.capabilities || server.getClientVersion() !== initialize.clientInfo) {
    throw new Error(
      `Cannot restore an MCP session: the SDK did not take the restored state as @modelcontextprotocol/sdk ${SDK_VERSION_OF_RESTORE} does (see restore-initialized-session.ts)`,
    );
  }
}
