import type { LlmTool } from '../assistant/llm/llm.service';
import type { ToolDefinition } from '../core/tools/tool-definition';

/** Each catalogue tool's projection, made once: tools are frozen, and every turn offers them all. */
const projected = new WeakMap<ToolDefinition, LlmTool>();

/** A catalogue tool as an OpenAI function tool: what the model is offered. */
export function toLlmTool(tool: ToolDefinition): LlmTool {
  let offered = projected.get(tool);
  if (!offered) {
    const { $schema: _dialect, ...parameters } = tool.inputSchema;
    offered = { type: 'function', function: { name: tool.name, description: tool.description, parameters } };
    projected.set(tool, offered);
  }
  return offered;
}
