import type { ToolDefinition } from '../core/tools/tool-definition';

/**
 * Label values are bounded by what the operator deployed, never by what a client sends: every
 * distinct value is a time series Prometheus keeps, so a client able to choose one could fill
 * the server's memory.
 */

/** The protocols whose connections are always reported, zero included, so dashboards show them. */
export const KNOWN_PROTOCOLS = ['llm', 'mcp', 'litemcp', 'utcp'] as const;

/** What stands for any value outside the bounded set: an unknown tool, a client's own tool. */
export const OTHER = 'other';

/**
 * A tool's `tool` label: its name for a shared tool of the catalogue (built-in, module,
 * upstream), `other` for an unknown name and for a device's own tool, whose name the device
 * chose.
 */
export function toolLabel(tool: ToolDefinition | undefined): string {
  return tool === undefined || tool.source.startsWith('client:') ? OTHER : tool.name;
}

/** A tool's `source` label: `builtin`, `module`, `mcp:<server>` (from the servers file), `client`, `unknown`. */
export function sourceLabel(tool: ToolDefinition | undefined): string {
  if (tool === undefined) return 'unknown';
  return tool.source.startsWith('client:') ? 'client' : tool.source;
}
