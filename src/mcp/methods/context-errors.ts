import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { UnknownContextError } from '../../core/context/context-source';
import { limitAsMcpError } from '../mcp.errors';

/** MCP's code for a resource no server offers ("Resource not found", in the spec's examples). */
const RESOURCE_NOT_FOUND = -32002;

/** An unknown URI, prompt or template as MCP answers it: -32002 for a resource, -32602 otherwise; a rate limit -32029; any other error as it was. */
function asMcpError(error: unknown): unknown {
  if (!(error instanceof UnknownContextError)) return limitAsMcpError(error);
  if (error.kind === 'resource') return new McpError(RESOURCE_NOT_FOUND, `Resource not found: ${error.key}`, { uri: error.key });
  return new McpError(ErrorCode.InvalidParams, error.message);
}

/** `request()`'s answer, its refusals in MCP's words (see {@link asMcpError}). */
export async function answeredAsMcp<T>(request: () => Promise<T>): Promise<T> {
  try {
    return await request();
  } catch (error) {
    throw asMcpError(error);
  }
}
