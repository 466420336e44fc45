import {
  ErrorCode,
  InitializeRequest,
  InitializeRequestSchema,
  ListToolsRequest,
  ListToolsRequestSchema,
  McpError,
  RequestSchema,
} from '@modelcontextprotocol/sdk/types.js';

/**
 * Requests whose params the gateway checks itself. The SDK parses a request against its
 * handler's schema before the handler runs and answers a failed parse with -32603 and zod's
 * multi-line dump; registered with loose params, they are checked here and a bad one is answered
 * -32602 "Invalid params" in one line, as JSON-RPC says.
 */
export const InitializeWithAnyParams = InitializeRequestSchema.extend({ params: RequestSchema.shape.params });
export const ListToolsWithAnyParams = ListToolsRequestSchema.extend({ params: RequestSchema.shape.params });

interface ParamsSchema<T> {
  safeParse(value: unknown): { success: true; data: T } | { success: false; error: { issues: { path: PropertyKey[]; message: string }[] } };
}

/** What is wrong with a request's params by `schema`, in one line, or `undefined`. */
function paramsProblem<T>(schema: ParamsSchema<T>, request: unknown): string | undefined {
  const parsed = schema.safeParse(request);
  if (parsed.success) return undefined;
  return parsed.error.issues
    .map(
      (issue) =>
        `${
          issue.path
            .filter((key) => key !== 'params')
            .map(String)
            .join('.') || 'params'
        }: ${issue.message}`,
    )
    .join('; ');
}

/** `request` as the handler of `method` expects it; McpError -32602 when it is not one. */
function checked<T>(schema: ParamsSchema<T>, method: string, request: unknown): T {
  const problem = paramsProblem(schema, request);
  if (problem !== undefined) throw new McpError(ErrorCode.InvalidParams, `Invalid ${method} params: ${problem}`);
  return request as T;
}

/** What is wrong with an `initialize` request's params, in one line, or `undefined`. */
export const initializeParamsProblem = (request: unknown): string | undefined => paramsProblem(InitializeRequestSchema, request);

export const checkedInitialize = (request: unknown): InitializeRequest => checked(InitializeRequestSchema, 'initialize', request);

export const checkedListTools = (request: unknown): ListToolsRequest => checked(ListToolsRequestSchema, 'tools/list', request);
