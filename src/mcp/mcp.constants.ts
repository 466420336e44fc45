/** Where MCP is served: WebSocket (both modes) and Streamable HTTP. */
export const MCP_PATH = '/mcp';

/** The subprotocol the SDK's `WebSocketClientTransport` offers: plain JSON-RPC frames, no envelope. */
export const PLAIN_MCP_SUBPROTOCOL = 'mcp';

/** The token realm of every MCP route: `AUTH_TOKENS` and `MCP_WS_AUTH_TOKEN`, never open. */
export const MCP_REALM = 'mcp';

/** The name MCP WebSocket connections are counted and limited under. */
export const MCP_PROTOCOL = 'mcp';
