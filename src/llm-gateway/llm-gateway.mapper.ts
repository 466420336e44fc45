import type { LlmTool } from '../core/llm/llm.service';
import type { ToolDefinition } from '../core/tools/tool-definition';

/** A catalogue tool as an OpenAI function tool: what the model is offered. */
export function toLlmTool(tool: ToolDefinition): LlmTool {
  const { $schema: _dialect, ...parameters } = tool.inputSchema;
  return { type: 'function', function: { name: tool.name, description: tool.description, parameters } };
}
