/** A JSON-RPC 2.0 error response; `id` is null when the request's id could not be read. */
export interface JsonRpcErrorResponse {
  jsonrpc: '2.0';
  id: string | number | null;
  error: { code: number; message: string; data?: unknown };
}

export function jsonRpcError(id: string | number | null, code: number, message: string, data?: unknown): JsonRpcErrorResponse {
  return { jsonrpc: '2.0', id, error: data === undefined ? { code, message } : { code, message, data } };
}

/** The id of a (possibly invalid) JSON-RPC request, to echo in its error response. */
export function requestIdOf(value: unknown): string | number | null {
  const id = (value as { id?: unknown } | null)?.id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

/** JSON-RPC's implementation-defined server error, which the SDK's HTTP transport uses for HTTP-level refusals. */
export const SERVER_ERROR = -32000;
