import type { LiteMcpVersion } from './dto/litemcp.dto';

/** The LiteMCP version this server speaks; requests of any 1.x version are accepted. */
export const LITEMCP_VERSION: LiteMcpVersion = [1, 0, 0];

export interface LiteMcpParameter {
  name: string;
  type: string;
  description?: string;
  example?: string;
}

/** `Tool`: how one tool describes itself. */
export interface LiteMcpTool {
  version: LiteMcpVersion;
  name: string;
  description?: string;
  example?: string;
  parameters?: LiteMcpParameter[];
}

export interface LiteMcpContent {
  type: string;
  data: string;
}

/** `CallResult`: the positional values echoed by name, and the response content. */
export interface LiteMcpCallResult {
  version: LiteMcpVersion;
  params: Record<string, string>;
  response: { content: LiteMcpContent[]; error: boolean };
}

/**
 * The frames this server sends. `error` is this gateway's extension (the spec has no error
 * frame): it answers a request that is not a well-formed `call`, echoing its `id` when the id
 * could be read and `null` otherwise.
 */
export type LiteMcpServerFrame =
  | { version: LiteMcpVersion; id: number; type: 'info'; data: LiteMcpTool }
  | { version: LiteMcpVersion; id: number; type: 'result'; data: LiteMcpCallResult }
  | { version: LiteMcpVersion; id: number | null; type: 'error'; data: { code: string; message: string } };

/** The frame's `id` when it has a usable one, for echoing in an answer: an integer JSON numbers hold exactly. */
export function frameId(frame: unknown): number | null {
  const id = (frame as { id?: unknown } | null)?.id;
  return Number.isSafeInteger(id) ? (id as number) : null;
}

export const infoFrame = (id: number, tool: LiteMcpTool): LiteMcpServerFrame => ({ version: LITEMCP_VERSION, id, type: 'info', data: tool });

export const resultFrame = (id: number, result: LiteMcpCallResult): LiteMcpServerFrame => ({
  version: LITEMCP_VERSION,
  id,
  type: 'result',
  data: result,
});

export const errorFrame = (id: number | null, code: string, message: string): LiteMcpServerFrame => ({
  version: LITEMCP_VERSION,
  id,
  type: 'error',
  data: { code, message },
});
