import type { JsonSchema } from '../core/tools/json-schema';
import type { ToolDefinition } from '../core/tools/tool-definition';
import type { ManualCallTemplateType } from './request-endpoint';
import {
  HTTP_BODY_FIELD,
  TOKEN_VARIABLE,
  UTCP_MANUAL_VERSION,
  UTCP_VERSION,
  UtcpApiKeyAuth,
  UtcpCallTemplate,
  UtcpHttpCallTemplate,
  UtcpManual,
  UtcpManualTool,
  UtcpSseCallTemplate,
  UtcpWebSocketCallTemplate,
} from './utcp.frames';

/**
 * The tag that marks a tool whose handler streams (`countdown`): the catalogue keeps no other
 * sign of it, since handlers are wrapped functions, so a streaming tool says so in its tags.
 */
export const STREAMING_TAG = 'streaming';

/** Where and how the client that asks for the manual reaches the gateway. */
export interface ManualEndpoint {
  /** `ws[s]://` or `http[s]://host[:port][/prefix]`, as the client reached the gateway (see `request-endpoint.ts`). */
  baseUrl: string;
  /** Which call templates the manual holds: `websocket` (the default) or `http` (`http` and `sse`). */
  callTemplate?: ManualCallTemplateType;
  /**
   * Whether the templates ask for streaming: every one (`true`), none (`false`), or those of
   * tools tagged {@link STREAMING_TAG} (`'per-tool'`).
   */
  streaming: boolean | 'per-tool';
  /** Whether the gateway checks tokens; the templates then send one, from {@link TOKEN_VARIABLE}. */
  authRequired: boolean;
}

/** Whether a tool says it streams (see {@link STREAMING_TAG}). */
export const isStreamingTool = (tool: ToolDefinition): boolean => tool.tags.includes(STREAMING_TAG);

const streamsIn = (tool: ToolDefinition, endpoint: ManualEndpoint): boolean => (endpoint.streaming === 'per-tool' ? isStreamingTool(tool) : endpoint.streaming);

/** UTCP call template names take letters, digits and `_` only. */
const templateName = (tool: ToolDefinition) => tool.name.replace(/\W/g, '_');

const toolPath = (tool: ToolDefinition, endpoint: ManualEndpoint, streaming: boolean) =>
  `${endpoint.baseUrl}/utcp/${encodeURIComponent(tool.name)}${streaming ? '?stream=true' : ''}`;

/** The token as a UTCP variable in the `Authorization` header; a manual never holds a secret. */
const tokenAuth = (): UtcpApiKeyAuth => ({
  auth_type: 'api_key',
  api_key: `Bearer \${${TOKEN_VARIABLE}}`,
  var_name: 'Authorization',
  location: 'header',
});

/** The call template that reaches `tool` on its own path, `/utcp/<tool>`, with its arguments as the frame. */
export function toCallTemplate(tool: ToolDefinition, endpoint: ManualEndpoint): UtcpWebSocketCallTemplate {
  const template: UtcpWebSocketCallTemplate = {
    call_template_type: 'websocket',
    name: templateName(tool),
    url: toolPath(tool, endpoint, streamsIn(tool, endpoint)),
    response_format: 'json',
    timeout: Math.ceil(tool.timeoutMs / 1000) + 1,
  };
  if (endpoint.authRequired) template.auth = tokenAuth();
  return template;
}

/**
 * The HTTP call template that reaches `tool` at `POST /utcp/<tool>`: `http` (the result as
 * JSON), or for a streaming call `sse` at `?stream=true` (each result as an event).
 */
export function toHttpCallTemplate(tool: ToolDefinition, endpoint: ManualEndpoint): UtcpHttpCallTemplate | UtcpSseCallTemplate {
  const streaming = streamsIn(tool, endpoint);
  const common = { name: templateName(tool), url: toolPath(tool, endpoint, streaming), body_field: HTTP_BODY_FIELD } as const;
  const template: UtcpHttpCallTemplate | UtcpSseCallTemplate = streaming
    ? { call_template_type: 'sse', ...common, headers: { 'Content-Type': 'application/json' }, reconnect: false }
    : { call_template_type: 'http', ...common, http_method: 'POST', content_type: 'application/json' };
  if (endpoint.authRequired) template.auth = tokenAuth();
  return template;
}

/**
 * A tool's input schema as an HTTP template's `inputs`: the arguments object under
 * {@link HTTP_BODY_FIELD}, nothing else (any other input would be sent as a query parameter).
 * Definitions move to the top, where the schema's `#/$defs/...` references still find them.
 */
export function toHttpInputs(inputSchema: JsonSchema): JsonSchema {
  const { $schema, $defs, definitions, ...argumentsSchema } = inputSchema;
  const required = Array.isArray(inputSchema.required) && inputSchema.required.length > 0;
  return {
    ...($schema === undefined ? {} : { $schema }),
    type: 'object',
    properties: { [HTTP_BODY_FIELD]: { description: "The tool's arguments, sent as the JSON request body", ...argumentsSchema } },
    ...(required ? { required: [HTTP_BODY_FIELD] } : {}),
    additionalProperties: false,
    ...($defs === undefined ? {} : { $defs }),
    ...(definitions === undefined ? {} : { definitions }),
  };
}

/** A catalogue tool as a UTCP 1.x manual tool; no output schema means any JSON value. */
export function toUtcpTool(tool: ToolDefinition, endpoint: ManualEndpoint): UtcpManualTool {
  const overHttp = endpoint.callTemplate === 'http';
  const template: UtcpCallTemplate = overHttp ? toHttpCallTemplate(tool, endpoint) : toCallTemplate(tool, endpoint);
  return {
    name: tool.name,
    description: tool.description,
    inputs: overHttp ? toHttpInputs(tool.inputSchema) : tool.inputSchema,
    outputs: tool.outputSchema ?? {},
    tags: [...tool.tags],
    tool_call_template: template,
  };
}

/** The UTCP 1.x manual of `tools`. */
export function toUtcpManual(tools: ToolDefinition[], endpoint: ManualEndpoint): UtcpManual {
  return {
    utcp_version: UTCP_VERSION,
    manual_version: UTCP_MANUAL_VERSION,
    tools: tools.map((tool) => toUtcpTool(tool, endpoint)),
  };
}
