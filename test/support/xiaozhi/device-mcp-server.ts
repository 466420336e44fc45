import { isJsonObject, JsonObject, objectItem, valueInt } from './cjson';
import { DeviceTool, ToolResult } from './device-tools';

/**
 * The device's MCP server (main/mcp_server.cc), which the gateway drives as a client over
 * `{"type":"mcp","payload":...}` messages. It answers as the firmware does:
 * - a payload is ignored unless `jsonrpc` is "2.0" and `method` a string; methods starting with
 *   `notifications` are ignored; a request whose `params` is not an object, or whose `id` is
 *   not a number (a string id too), gets no answer at all; the id answered is its `valueint`;
 * - `tools/list` pages by size: a page stops before the tool that would take it over 8000
 *   bytes, `nextCursor` is that tool's name, and the last page has no `nextCursor` key;
 * - `tools/call` answers `{"content":[{"type":"text","text":...}],"isError":false}`; every
 *   failure is a JSON-RPC error `{"message":...}` with no `code`, its message concatenated
 *   unescaped into the JSON;
 * - answers go out one at a time, in order, as the firmware's main task sends them.
 */

export const MCP_PROTOCOL_VERSION = '2024-11-05';
/** GetToolsList's `max_payload_size`. */
export const TOOLS_LIST_MAX_PAYLOAD_BYTES = 8000;

/** Ways a test makes the device a bad MCP server; a method list may hold '*' for every method. */
export interface McpMisbehaviour {
  /** Methods the device never answers. */
  silentTo?: readonly string[];
  /** Methods answered with an id the request did not have. */
  wrongIdFor?: readonly string[];
  /** Methods answered with a JSON-RPC error instead of their result. */
  errorFor?: readonly string[];
  /** `tools/list` always names a `nextCursor` (the last page points back to the first), so following it never ends. */
  endlessToolsList?: boolean;
}

export interface DeviceMcpServerOptions {
  /** BOARD_NAME and the firmware version: `serverInfo`. */
  serverName: string;
  serverVersion: string;
  tools: readonly DeviceTool[];
  /** Pages of at most this many bytes (the firmware's 8000 by default). */
  maxPayloadBytes?: number;
  /** Pages of at most this many tools as well, for tests of pagination with few tools. */
  pageSize?: number;
  misbehave?: McpMisbehaviour;
}

/** A request the server sent, as the device received it. */
export interface McpRequestSeen {
  payload: JsonObject;
  /** Whether the firmware's checks let it through to a method. */
  handled: boolean;
}

const WRONG_ID_OFFSET = 1_000_000;

export class DeviceMcpServer {
  readonly seen: McpRequestSeen[] = [];
  /** What the device answered, as the JSON text of each payload, in order. */
  readonly answers: string[] = [];
  private mainTask: Promise<void> = Promise.resolve();
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopped = false;

  constructor(
    private readonly options: DeviceMcpServerOptions,
    private readonly send: (payload: string) => void,
  ) {}

  get tools(): readonly DeviceTool[] {
    return this.options.tools;
  }

  /** McpServer::ParseMessage for the `payload` object of an `mcp` message. */
  handle(payload: JsonObject): void {
    const seen: McpRequestSeen = { payload, handled: false };
    this.seen.push(seen);
    if (objectItem(payload, 'jsonrpc') !== '2.0') return;
    const method = objectItem(payload, 'method');
    if (typeof method !== 'string' || method.startsWith('notifications')) return;
    const params = objectItem(payload, 'params');
    if (params !== undefined && !isJsonObject(params)) return;
    const rawId = objectItem(payload, 'id');
    if (typeof rawId !== 'number') return;
    seen.handled = true;
    const id = valueInt(rawId);
    const misbehave = this.options.misbehave ?? {};
    if (matches(misbehave.silentTo, method)) return;
    const answerId = matches(misbehave.wrongIdFor, method) ? id + WRONG_ID_OFFSET : id;
    if (matches(misbehave.errorFor, method)) return this.replyError(answerId, `Simulated failure of ${method}`);
    this.dispatch(answerId, method, params);
  }

  /** Drops answers not sent yet and timers of tools still running. */
  stop(): void {
    this.stopped = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }

  private dispatch(id: number, method: string, params: JsonObject | undefined): void {
    if (method === 'initialize') {
      const serverInfo = `{"name":"${this.options.serverName}","version":"${this.options.serverVersion}"}`;
      return this.replyResult(id, `{"protocolVersion":"${MCP_PROTOCOL_VERSION}","capabilities":{"tools":{}},"serverInfo":${serverInfo}}`);
    }
    if (method === 'tools/list') {
      const cursor = objectItem(params, 'cursor');
      const withUserTools = objectItem(params, 'withUserTools');
      return this.listTools(id, typeof cursor === 'string' ? cursor : '', withUserTools === true);
    }
    if (method === 'tools/call') {
      if (!isJsonObject(params)) return this.replyError(id, 'Missing params');
      const name = objectItem(params, 'name');
      if (typeof name !== 'string') return this.replyError(id, 'Missing name');
      const args = objectItem(params, 'arguments');
      if (args !== undefined && !isJsonObject(args)) return this.replyError(id, 'Invalid arguments');
      return this.callTool(id, name, args);
    }
    this.replyError(id, `Method not implemented: ${method}`);
  }

  /** McpServer::GetToolsList, the size rule and its quirks included. */
  private listTools(id: number, cursor: string, withUserTools: boolean): void {
    const tools = this.options.tools;
    const maxPayloadBytes = this.options.maxPayloadBytes ?? TOOLS_LIST_MAX_PAYLOAD_BYTES;
    let json = '{"tools":[';
    let nextCursor = '';
    let foundCursor = cursor === '';
    let listed = 0;
    for (const tool of tools) {
      if (!foundCursor) {
        if (tool.name !== cursor) continue;
        foundCursor = true;
      }
      if (tool.userOnly && !withUserTools) continue;
      const toolJson = `${toolListing(tool)},`;
      const pageFull = this.options.pageSize !== undefined && listed >= this.options.pageSize;
      if (pageFull || Buffer.byteLength(json) + Buffer.byteLength(toolJson) + 30 > maxPayloadBytes) {
        nextCursor = tool.name;
        break;
      }
      json += toolJson;
      listed++;
    }
    if (json.endsWith(',')) json = json.slice(0, -1);
    if (json.endsWith('[') && tools.length > 0) return this.replyError(id, `Failed to add tool ${nextCursor} because of payload size limit`);
    if (nextCursor === '' && this.options.misbehave?.endlessToolsList && tools.length > 0) nextCursor = tools[0].name;
    this.replyResult(id, nextCursor === '' ? `${json}]}` : `${json}],"nextCursor":"${nextCursor}"}`);
  }

  /** McpServer::DoToolCall: the declared arguments are read, checked and defaulted before the tool runs. */
  private callTool(id: number, name: string, args: JsonObject | undefined): void {
    const tool = this.options.tools.find((candidate) => candidate.name === name);
    if (!tool) return this.replyError(id, `Unknown tool: ${name}`);
    const values: Record<string, unknown> = {};
    for (const [property, schema] of Object.entries(tool.inputSchema.properties)) {
      const value = objectItem(args, property);
      let found = false;
      if (schema.type === 'boolean' && typeof value === 'boolean') {
        values[property] = value;
        found = true;
      } else if (schema.type === 'integer' && typeof value === 'number') {
        const integer = valueInt(value);
        if (schema.minimum !== undefined && integer < schema.minimum) return this.replyError(id, `Value is below minimum allowed: ${schema.minimum}`);
        if (schema.maximum !== undefined && integer > schema.maximum) return this.replyError(id, `Value exceeds maximum allowed: ${schema.maximum}`);
        values[property] = integer;
        found = true;
      } else if (schema.type === 'string' && typeof value === 'string') {
        values[property] = value;
        found = true;
      }
      if (found) continue;
      if (!('default' in schema)) return this.replyError(id, `Missing valid argument: ${property}`);
      values[property] = schema.default;
    }
    this.onMainTask(async () => {
      if (tool.delayMs) await this.sleep(tool.delayMs);
      let result: ToolResult;
      try {
        result = await tool.run(values);
      } catch (error) {
        return this.deliver(errorPayload(id, error instanceof Error ? error.message : String(error)));
      }
      this.deliver(resultPayload(id, `{"content":[{"type":"text","text":${JSON.stringify(resultText(result))}}],"isError":false}`));
    });
  }

  private replyResult(id: number, result: string): void {
    this.onMainTask(() => this.deliver(resultPayload(id, result)));
  }

  private replyError(id: number, message: string): void {
    this.onMainTask(() => this.deliver(errorPayload(id, message)));
  }

  private deliver(payload: string): void {
    if (this.stopped) return;
    this.answers.push(payload);
    this.send(payload);
  }

  private onMainTask(job: () => void | Promise<void>): void {
    this.mainTask = this.mainTask.then(job).catch(() => undefined);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        resolve();
      }, ms);
      this.timers.add(timer);
    });
  }
}

/** McpTool::to_json: name, description, inputSchema, and the user audience of user-only tools. */
export function toolListing(tool: DeviceTool): string {
  return JSON.stringify({
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema,
    ...(tool.userOnly ? { annotations: { audience: ['user'] } } : {}),
  });
}

function resultText(result: ToolResult): string {
  if (typeof result === 'string') return result;
  if (typeof result === 'boolean') return result ? 'true' : 'false';
  if (typeof result === 'number') return String(valueInt(result));
  return JSON.stringify(result);
}

function resultPayload(id: number, result: string): string {
  return `{"jsonrpc":"2.0","id":${id},"result":${result}}`;
}

function errorPayload(id: number, message: string): string {
  return `{"jsonrpc":"2.0","id":${id},"error":{"message":"${message}"}}`;
}

function matches(methods: readonly string[] | undefined, method: string): boolean {
  return methods !== undefined && (methods.includes('*') || methods.includes(method));
}
