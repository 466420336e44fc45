import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { UnknownContextError } from '../core/context/context-source';
import { RateLimitedError } from '../core/limits/rate-limited.error';
import { RATE_LIMITED_ERROR } from './mcp.errors';

/** MCP's code for a resource no server offers ("Resource not found", in the spec's examples). */
export const RESOURCE_NOT_FOUND = -32002;

/** An unknown URI, prompt or template as MCP answers it: -32002 for a resource, -32602 otherwise; a rate limit -32029; any other error as it was. */
function asMcpError(error: unknown): unknown {
  if (error instanceof RateLimitedError) return new McpError(RATE_LIMITED_ERROR, error.message, error.wait);
  if (!(error instanceof UnknownContextError)) return error;
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
