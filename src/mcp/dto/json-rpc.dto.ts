/**
 * A JSON-RPC 2.0 message as MCP's SDK accepts one (its `JSONRPCMessageSchema`: a request, a
 * notification, a result or an error, nothing else at the top level), as a JSON Schema compiled
 * once: it decides, before the SDK sees a frame, whether the frame is answered "Invalid Request".
 * The SDK still checks what each method's params must be.
 */
const jsonrpc = { const: '2.0' } as const;
/**
 * A numeric id must survive `JSON.parse` exactly, as the SDK requires (a safe integer): one past
 * 2^53 is rounded, and would name another request if echoed; `1e400` parses as Infinity.
 */
const requestId = {
  anyOf: [{ type: 'string' }, { type: 'integer', minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER }],
} as const;
const params = { type: 'object', properties: { _meta: { type: 'object' } } } as const;

export const jsonRpcMessageSchema = {
  anyOf: [
    {
      type: 'object',
      properties: { jsonrpc, id: requestId, method: { type: 'string' }, params },
      required: ['jsonrpc', 'id', 'method'],
      additionalProperties: false,
    },
    {
      type: 'object',
      properties: { jsonrpc, method: { type: 'string' }, params },
      required: ['jsonrpc', 'method'],
      additionalProperties: false,
    },
    {
      type: 'object',
      properties: { jsonrpc, id: requestId, result: { type: 'object', properties: { _meta: { type: 'object' } } } },
      required: ['jsonrpc', 'id', 'result'],
      additionalProperties: false,
    },
    {
      type: 'object',
      properties: {
        jsonrpc,
        id: requestId,
        error: { type: 'object', properties: { code: { type: 'integer' }, message: { type: 'string' }, data: {} }, required: ['code', 'message'] },
      },
      required: ['jsonrpc', 'error'],
      additionalProperties: false,
    },
  ],
} as const;
