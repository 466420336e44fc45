import { ErrorCode, InitializeRequest, InitializeRequestSchema, McpError, RequestSchema } from '@modelcontextprotocol/sdk/types.js';

/**
 * `initialize` with any params. The SDK parses a request against its handler's schema before the
 * handler runs and answers a failed parse with -32603 and zod's dump; registered with loose
 * params, the gateway checks them itself and answers -32602 "Invalid params", as JSON-RPC says.
 */
export const InitializeWithAnyParams = InitializeRequestSchema.extend({ params: RequestSchema.shape.params });

/** What is wrong with an `initialize` request's params, in one line, or `undefined`. */
export function initializeParamsProblem(request: unknown): string | undefined {
  const parsed = InitializeRequestSchema.safeParse(request);
  if (parsed.success) return undefined;
  return parsed.error.issues
    .map((issue) => `${issue.path.filter((key) => key !== 'params').join('.') || 'params'}: ${issue.message}`)
    .join('; ');
}

/** The request as the SDK's `initialize` handler expects it; McpError -32602 when it is not one. */
export function checkedInitialize(request: unknown): InitializeRequest {
  const problem = initializeParamsProblem(request);
  if (problem !== undefined) throw new McpError(ErrorCode.InvalidParams, `Invalid initialize params: ${problem}`);
  return request as InitializeRequest;
}
