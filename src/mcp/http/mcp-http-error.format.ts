import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import type { DescribedError } from '../../core/errors/describe-exception';
import { jsonRpcError, JsonRpcErrorResponse, SERVER_ERROR } from '../json-rpc-error';

/**
 * A failure on `/mcp` before the SDK's transport saw the request, as the JSON-RPC error body MCP
 * clients read: a body that is not JSON (the only 400 that reaches the filter there) is -32700,
 * a body over the size limit -32600, anything else (auth, MCP turned off) -32000 with its message.
 */
export function mcpHttpErrorBody({ status, message }: DescribedError): JsonRpcErrorResponse {
  if (status === 400) return jsonRpcError(null, ErrorCode.ParseError, `Parse error: ${message}`);
  if (status === 413) return jsonRpcError(null, ErrorCode.InvalidRequest, `Invalid Request: ${message}`);
  return jsonRpcError(null, SERVER_ERROR, message);
}
