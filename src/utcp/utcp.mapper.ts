import type { ToolDefinition } from '../core/tools/tool-definition';
import {
  TOKEN_VARIABLE,
  UTCP_MANUAL_VERSION,
  UTCP_VERSION,
  UtcpManual,
  UtcpManualTool,
  UtcpWebSocketCallTemplate,
} from './utcp.frames';

/** Where and how the client that asks for the manual reaches the gateway. */
export interface ManualEndpoint {
  /** `ws[s]://host[:port][/prefix]`, as the client reached the gateway (see `publicWebSocketBase`). */
  baseUrl: string;
  /** Whether the call templates ask for streaming frames (`?stream=true` on each tool's URL). */
  streaming: boolean;
  /** Whether the gateway checks tokens; the templates then send one, from {@link TOKEN_VARIABLE}. */
  authRequired: boolean;
}

/** The call template that reaches `tool` on its own path, `/utcp/<tool>`, with its arguments as the frame. */
export function toCallTemplate(tool: ToolDefinition, endpoint: ManualEndpoint): UtcpWebSocketCallTemplate {
  const template: UtcpWebSocketCallTemplate = {
    call_template_type: 'websocket',
    name: tool.name.replace(/\W/g, '_'),
    url: `${endpoint.baseUrl}/utcp/${encodeURIComponent(tool.name)}${endpoint.streaming ? '?stream=true' : ''}`,
    response_format: 'json',
    timeout: Math.ceil(tool.timeoutMs / 1000) + 1,
  };
  if (endpoint.authRequired) {
    template.auth = { auth_type: 'api_key', api_key: `Bearer \${${TOKEN_VARIABLE}}`, var_name: 'Authorization', location: 'header' };
  }
  return template;
}

/** A catalogue tool as a UTCP 1.x manual tool; no output schema means any JSON value. */
export function toUtcpTool(tool: ToolDefinition, endpoint: ManualEndpoint): UtcpManualTool {
  return {
    name: tool.name,
    description: tool.description,
    inputs: tool.inputSchema,
    outputs: tool.outputSchema ?? {},
    tags: [...tool.tags],
    tool_call_template: toCallTemplate(tool, endpoint),
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
