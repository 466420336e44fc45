import type { ToolDefinition } from '../core/tools/tool-definition';

/**
 * Label values are bounded by what the operator deployed, never by what a client sends: every
 * distinct value is a time series Prometheus keeps, so a client able to choose one could fill
 * the server's memory.
 */

/** What stands for any value outside the bounded set: an unknown tool, a client's own tool. */
export const OTHER = 'other';

/** Whether a tool is a device's: its connection's own (`client:<connection>`), or offered to agents (`device:<device id>`); the device chose its name and its id. */
function isDevicesTool(tool: ToolDefinition): boolean {
  return tool.source.startsWith('client:') || tool.source.startsWith('device:');
}

/**
 * A tool's `tool` label: its name for a shared tool of the catalogue (built-in, module,
 * upstream), `other` for an unknown name and for a device's tool, whose name and id the device
 * chose.
 */
export function toolLabel(tool: ToolDefinition | undefined): string {
  return tool === undefined || isDevicesTool(tool) ? OTHER : tool.name;
}

/** A tool's `source` label: `builtin`, `module`, `mcp:<server>` (from the servers file), `client` (a device's own), `device` (one offered to agents), `unknown`. */
export function sourceLabel(tool: ToolDefinition | undefined): string {
  if (tool === undefined) return 'unknown';
  if (tool.source.startsWith('client:')) return 'client';
  return tool.source.startsWith('device:') ? 'device' : tool.source;
}
