import type { JsonSchema } from '../core/tools/json-schema';
import type { ToolDefinition, ToolExample, ToolSource } from '../core/tools/tool-definition';

/** One tool as `GET /tools` lists it: what a person or a test console needs to call it. */
export interface CatalogueEntry {
  name: string;
  description: string;
  /** `builtin`, `module`, `mcp:<server>`. */
  source: ToolSource;
  tags: string[];
  inputSchema: JsonSchema;
  outputSchema?: JsonSchema;
  examples: ToolExample[];
  /** Time limit of one call, ms. */
  timeoutMs: number;
}

export interface Catalogue {
  tools: CatalogueEntry[];
}

/** The catalogue tool as JSON, without its handler. */
export function toCatalogueEntry(tool: ToolDefinition): CatalogueEntry {
  return {
    name: tool.name,
    description: tool.description,
    source: tool.source,
    tags: [...tool.tags],
    inputSchema: tool.inputSchema,
    ...(tool.outputSchema !== undefined && { outputSchema: tool.outputSchema }),
    examples: [...tool.examples],
    timeoutMs: tool.timeoutMs,
  };
}
