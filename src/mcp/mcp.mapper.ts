import type { CallToolResult, ContentBlock, Tool } from '@modelcontextprotocol/sdk/types.js';
import { isPlainObject } from '../core/plain-object';
import type { JsonSchema } from '../core/tools/json-schema';
import type { ToolDefinition, ToolOutcome } from '../core/tools/tool-definition';

/** MCP only takes object schemas as a tool's `outputSchema`; any other output schema is left out. */
function objectOutputSchema(tool: ToolDefinition): JsonSchema | undefined {
  return tool.outputSchema?.type === 'object' ? tool.outputSchema : undefined;
}

/**
 * A catalogue tool as MCP lists it, with its title, annotations and icons when it has them. The
 * input schema always says `type: "object"`, which MCP requires and the catalogue enforces anyway
 * (arguments are an object); examples and tags have no place in MCP's Tool and are not shown.
 */
export function toMcpTool(tool: ToolDefinition): Tool {
  const described: Tool = {
    name: tool.name,
    ...(tool.presentation as Partial<Tool> | undefined),
    description: tool.description,
    inputSchema: { ...tool.inputSchema, type: 'object' },
  };
  const outputSchema = objectOutputSchema(tool);
  if (outputSchema) described.outputSchema = { ...outputSchema, type: 'object' };
  if (tool.longRunning) described.execution = { taskSupport: 'optional' };
  return described;
}

/** A returned value as content: strings as they are, anything else as its JSON text. */
function contentOfValue(value: unknown): ContentBlock[] {
  if (value === undefined || value === null) return [];
  return [{ type: 'text', text: typeof value === 'string' ? value : JSON.stringify(value) }];
}

const failedResult = (message: string): CallToolResult => ({ content: [{ type: 'text', text: message }], isError: true });

/**
 * A catalogue outcome as an MCP `tools/call` result. A failure of any kind (bad arguments, the
 * tool threw or timed out) is a result with `isError: true` and the reason as text, so the
 * model can read it and try again. A tool with an object output schema also answers
 * `structuredContent`, which MCP clients check against that schema; content blocks a tool
 * produced itself (upstream MCP tools) pass through unchanged.
 */
export function toCallToolResult(tool: ToolDefinition, outcome: ToolOutcome): CallToolResult {
  if (!outcome.ok) return failedResult(outcome.message);
  const content = outcome.content ? (outcome.content as ContentBlock[]) : contentOfValue(outcome.value);
  if (!objectOutputSchema(tool)) return { content };
  if (!isPlainObject(outcome.value)) {
    return failedResult(`Tool "${tool.name}" returned ${JSON.stringify(outcome.value) ?? 'nothing'}, not the object its output schema describes`);
  }
  return { content, structuredContent: outcome.value };
}
