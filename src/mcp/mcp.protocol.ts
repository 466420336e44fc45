import { hostForUrls } from '../core/logging/startup-summary';
import type { ProtocolDeclaration } from '../core/protocols/protocol-registry';
import { MCP_PATH, MCP_PROTOCOL } from './mcp.constants';

/**
 * MCP as the core lists it (see `ProtocolRegistry`): listed even when `MCP_ENABLED=false` says
 * it is off, and an OAuth protected resource of its own at `/mcp`, as MCP's authorization spec
 * has its clients look for one.
 */
export const MCP_DECLARATION: ProtocolDeclaration = {
  name: MCP_PROTOCOL,
  title: 'MCP',
  protectedResource: MCP_PATH,
  summary: ({ http, ws, config: { mcp } }) => {
    if (!mcp.enabled) return 'off (MCP_ENABLED=false)';
    const dedicated = mcp.ws.port === 0 ? '' : `; WebSocket also on ws://${hostForUrls(mcp.ws.host)}:${mcp.ws.port}/`;
    return `${http}${MCP_PATH} (Streamable HTTP) and ${ws}${MCP_PATH} (WebSocket)${dedicated}`;
  },
};
