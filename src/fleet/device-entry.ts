import type { JsonSchema } from '../core/tools/json-schema';

/** Who a device tool is for (`register_tools` `visibility`): `agents` never reach the model, `model` never leaves the device's turns. */
export type ToolVisibility = 'agents' | 'model' | 'both';

export const TOOL_VISIBILITIES: readonly ToolVisibility[] = ['agents', 'model', 'both'];

/** A tool a device offers agents, as the directory keeps it. */
export interface DeviceTool {
  name: string;
  description: string;
  inputSchema: JsonSchema;
  visibility: ToolVisibility;
}

/** A device online: who connected it, where its socket is, since when, and the tools it offers agents. */
export interface DeviceEntry {
  id: string;
  /** The principal that connected it; `undefined` while auth is off. */
  principal?: string;
  /** The principal that owns its id: the one that connected it, or another whose token is granted the id (`devices` globs) connected it. */
  owner?: string;
  /** The protocol it speaks (`llm`, `xiaozhi`); entries written before it was recorded have none. */
  protocol?: string;
  /** The board and firmware it runs, when it said (a xiaozhi device's `User-Agent`, `board/version`). */
  userAgent?: string;
  /** The instance that holds its socket. */
  instance: string;
  /** Its connection there: a later connection of the same id replaces it. */
  connectionId: string;
  /** When it connected, ISO 8601. */
  since: string;
  tools: DeviceTool[];
}
