import { Logger } from '@nestjs/common';
import { PendingReplies } from '../core/requests/pending-replies';
import type { ToolCallContext } from '../core/tools/tool-definition';
import { ToolError } from '../core/tools/tool-error';
import { isPlainObject } from '../core/plain-object';
import type { VoiceEvent } from '../metrics/metrics.service';

/** Pages of `tools/list` followed at most: a device whose `nextCursor` never ends stops being asked here. */
export const MAX_TOOL_PAGES = 16;
/** How long the device has to answer `initialize` and each `tools/list` page. */
const DISCOVERY_TIMEOUT_MS = 10_000;
/** The MCP revision offered; the firmware answers with its own and is not strict about ours. */
const PROTOCOL_VERSION = '2024-11-05';

/** A JSON-RPC 2.0 answer from the device. */
interface JsonRpcAnswer {
  result?: unknown;
  error?: { code?: number; message?: string };
}

/** A tool the device listed, as `tools/list` describes it. */
export interface DeviceMcpTool {
  /** The device's own name (`self.audio_speaker.set_volume`). */
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** What a device answered wrong, counted as the voice session's events. */
export type DeviceMcpProblem = Extract<VoiceEvent, `device_mcp_${string}`>;

/**
 * The gateway as MCP client of a xiaozhi device (`docs/mcp-protocol.md`, `main/mcp_server.cc`),
 * over `type:"mcp"` messages: `initialize`, then `tools/list` following `nextCursor` for at most
 * {@link MAX_TOOL_PAGES} pages, then `tools/call` for each call of the model or an agent, until
 * the call's own signal (its tool timeout) ends the wait. Answers are paired by id in a
 * {@link PendingReplies}; one with an id nobody waits for is dropped and counted, and every wait
 * ends when the connection closes.
 */
export class DeviceMcpClient {
  private readonly replies = new PendingReplies<JsonRpcAnswer>();
  private readonly logger = new Logger('Xiaozhi');
  private nextId = 1;

  constructor(
    private readonly deviceId: string,
    /** Sends one JSON-RPC message to the device (wrapped in `{"type":"mcp"}` by the session). */
    private readonly send: (payload: Record<string, unknown>) => boolean,
    private readonly onProblem: (problem: DeviceMcpProblem) => void,
  ) {}

  /** Requests waiting for the device's answer. */
  get waiting(): number {
    return this.replies.size;
  }

  /** `initialize`, then every page of `tools/list`: the tools the device offers. */
  async discover(signal: AbortSignal): Promise<DeviceMcpTool[]> {
    await this.request(
      'initialize',
      { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'voice-tool-gateway', version: '1' } },
      { signal, timeoutMs: DISCOVERY_TIMEOUT_MS },
    );
    this.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    const tools: DeviceMcpTool[] = [];
    let cursor = '';
    for (let page = 0; page < MAX_TOOL_PAGES; page += 1) {
      const result = await this.request('tools/list', { cursor }, { signal, timeoutMs: DISCOVERY_TIMEOUT_MS });
      const listed = isPlainObject(result) && Array.isArray(result.tools) ? result.tools : [];
      for (const tool of listed) {
        const read = readTool(tool);
        if (read) tools.push(read);
        else this.onProblem('device_mcp_bad_tool');
      }
      cursor = isPlainObject(result) && typeof result.nextCursor === 'string' ? result.nextCursor : '';
      if (cursor === '') return tools;
    }
    this.onProblem('device_mcp_endless_cursor');
    this.logger.warn(`Device ${this.deviceId}: tools/list still had a nextCursor after ${MAX_TOOL_PAGES} pages; kept the ${tools.length} tools listed so far`);
    return tools;
  }

  /** `tools/call`; the text of its content, or a ToolError with it when the device says `isError`. */
  async call(name: string, args: Record<string, unknown>, context: Pick<ToolCallContext, 'signal'>): Promise<unknown> {
    const result = await this.request('tools/call', { name, arguments: args }, { signal: context.signal });
    const content = isPlainObject(result) && Array.isArray(result.content) ? result.content : [];
    const text = content
      .filter((part): part is { type: 'text'; text: string } => isPlainObject(part) && part.type === 'text' && typeof part.text === 'string')
      .map((part) => part.text)
      .join('\n');
    if (isPlainObject(result) && result.isError === true) throw new ToolError(text || `The device could not run "${name}"`);
    return text;
  }

  /** One JSON-RPC message from the device: an answer settles its request; requests and notifications from the device are not ours to serve. */
  receive(payload: Record<string, unknown>): void {
    const { id } = payload;
    if (!('result' in payload) && !('error' in payload)) {
      if (id !== undefined && id !== null && typeof payload.method === 'string')
        this.send({ jsonrpc: '2.0', id, error: { code: -32601, message: `The gateway serves no method "${payload.method}" to devices` } });
      return;
    }
    if (!this.replies.settle(String(id), payload as JsonRpcAnswer)) {
      this.onProblem('device_mcp_unknown_id');
      this.logger.warn(`Device ${this.deviceId}: an MCP answer with id ${JSON.stringify(id)?.slice(0, 40)} that no request waits for; dropped`);
    }
  }

  /** Ends every wait: the connection closed. */
  close(): void {
    this.replies.failWhere(
      () => true,
      () => new ToolError(`Device "${this.deviceId}" disconnected before it answered`),
    );
  }

  private async request(method: string, params: Record<string, unknown>, options: { signal: AbortSignal; timeoutMs?: number }): Promise<unknown> {
    const id = this.nextId++;
    const answer = await this.replies.request((key) => void this.send({ jsonrpc: '2.0', id: Number(key), method, params }), {
      id: String(id),
      signal: options.signal,
      timeoutMs: options.timeoutMs,
      timeoutError: () => new ToolError(`Device "${this.deviceId}" did not answer ${method} within ${(options.timeoutMs ?? 0) / 1000} s`),
    });
    if (answer.error) throw new ToolError(`Device "${this.deviceId}" refused ${method}: ${answer.error.message ?? `error ${answer.error.code}`}`);
    return answer.result;
  }
}

function readTool(tool: unknown): DeviceMcpTool | undefined {
  if (!isPlainObject(tool) || typeof tool.name !== 'string') return undefined;
  const inputSchema = isPlainObject(tool.inputSchema) ? tool.inputSchema : { type: 'object', properties: {} };
  return { name: tool.name, description: typeof tool.description === 'string' ? tool.description : '', inputSchema };
}
