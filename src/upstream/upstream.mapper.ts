import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { JsonSchema } from '../core/tools/json-schema';
import { textOfContent, ToolContentResult } from '../core/tools/tool-content';
import type { ToolContentBlock, ToolDefinition, ToolPresentation } from '../core/tools/tool-definition';
import { catalogueNames } from './upstream-tool-names';

/** An upstream tool as it joins the catalogue, with the name the upstream knows it by. */
export interface PlannedTool {
  upstreamName: string;
  name: string;
  description: string;
  inputSchema: JsonSchema;
  outputSchema?: JsonSchema;
  presentation?: ToolPresentation;
  longRunning?: boolean;
  /** The upstream runs it only as an MCP task (`taskSupport: "required"`): the gateway calls it as one. */
  taskRequired?: boolean;
}

/** An upstream tool the catalogue cannot offer, and why; shown on `/health`. */
export interface SkippedTool {
  tool: string;
  reason: string;
}

/**
 * An upstream's `tools/list` as catalogue entries: names made valid under the server's prefix
 * (see upstream-tool-names.ts), schemas as the upstream gave them. A tool that may run long
 * (`taskSupport` "optional" or "required") is long for the gateway's clients too; one that runs
 * only as a task is called as one.
 */
export function planTools(prefix: string, tools: readonly Tool[]): PlannedTool[] {
  const names = catalogueNames(
    prefix,
    tools.map((tool) => tool.name),
  );
  return tools.map((tool) => ({
    upstreamName: tool.name,
    name: names.get(tool.name)!,
    description: tool.description ?? tool.title ?? tool.annotations?.title ?? '',
    inputSchema: tool.inputSchema as JsonSchema,
    ...(tool.outputSchema && { outputSchema: tool.outputSchema as JsonSchema }),
    ...presentationOf(tool),
    ...(tool.execution?.taskSupport === 'optional' && { longRunning: true }),
    ...(tool.execution?.taskSupport === 'required' && { longRunning: true, taskRequired: true }),
  }));
}

/** The upstream tool's title, annotations and icons, as it sent them. */
function presentationOf({ title, annotations, icons }: Tool): { presentation?: ToolPresentation } {
  if (title === undefined && annotations === undefined && icons === undefined) return {};
  return { presentation: { ...(title !== undefined && { title }), ...(annotations && { annotations }), ...(icons && { icons }) } };
}

/** Whether the catalogue's tool already is `planned` (so a refreshed list leaves it alone). */
export function isSameTool(tool: ToolDefinition, planned: PlannedTool, timeoutMs: number): boolean {
  return (
    tool.description === planned.description &&
    tool.timeoutMs === timeoutMs &&
    JSON.stringify(tool.inputSchema) === JSON.stringify(planned.inputSchema) &&
    JSON.stringify(tool.outputSchema) === JSON.stringify(planned.outputSchema) &&
    JSON.stringify(tool.presentation) === JSON.stringify(planned.presentation) &&
    tool.longRunning === planned.longRunning
  );
}

/** A successful `tools/call` result as the catalogue's content result, blocks and structured value untouched. */
export function toContentResult(result: CallToolResult): ToolContentResult {
  return new ToolContentResult(result.content as ToolContentBlock[], result.structuredContent);
}

/** The text of a failed (`isError`) result, which the upstream wrote for the caller to read. */
export function errorText(result: CallToolResult): string {
  return textOfContent(result.content as ToolContentBlock[]);
}
