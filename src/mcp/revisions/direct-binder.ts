import type { CallToolRequest, CallToolResult, JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { isPromise, MaybePromise } from '../../core/maybe-promise';
import { isPlainObject } from '../../core/plain-object';
import type { ToolCallScope } from '../../core/tools/tool-call-scope';
import type { ToolDefinition } from '../../core/tools/tool-definition';
import type { ToolCallControls } from '../../core/tools/tool-invoker';
import type { McpMethods } from '../methods/mcp-methods';

type RequestId = string | number;

/** A plain `tools/call`: its id and its params (a name, an arguments object, perhaps a `_meta`). */
export interface PlainToolCall {
  id: RequestId;
  params: CallToolRequest['params'];
}

/**
 * How one revision puts the plain `tools/call` that {@link DirectBinder} answers, and its answer,
 * so that the answer is the one the revision's SDK server would give.
 */
export interface PlainCallForm {
  /** The call `message` makes when it is plain in this revision; `undefined` leaves it to the SDK server. */
  callOf(message: JSONRPCMessage): PlainToolCall | undefined;
  /** The result as the revision's SDK server sends it. */
  resultOf(result: CallToolResult): CallToolResult;
  /** Whether `tool` may be called here: one that needs what only the SDK server gives stays there. */
  takes(tool: ToolDefinition): boolean;
}

/**
 * Whether `tool` may talk to its caller while it runs (progress, log messages, elicitation,
 * sampling): an upstream MCP server's may. The direct path has no caller to give it, so such a
 * call goes to the SDK server, which relays all of that.
 */
export const talksToCaller = (tool: ToolDefinition): boolean => tool.source.startsWith('mcp:');

/**
 * A `tools/call` request with an id, a tool name, an arguments object (or none) and nothing else
 * in its params but a `_meta`, which the revision's form judges; `undefined` for any other message.
 */
export function plainToolCall(message: JSONRPCMessage): PlainToolCall | undefined {
  const request = message as { id?: unknown; method?: unknown; params?: Record<string, unknown> };
  if (request.method !== 'tools/call' || request.id === undefined || !isPlainObject(request.params)) return undefined;
  const { name, arguments: args, _meta, ...rest } = request.params;
  if (typeof name !== 'string' || (args !== undefined && !isPlainObject(args)) || Object.keys(rest).length > 0) return undefined;
  return { id: request.id as RequestId, params: request.params as CallToolRequest['params'] };
}

/**
 * The method table's `tools/call` bound straight to a WebSocket connection's messages, for the one
 * request clients send most: a plain `tools/call` of a catalogue tool is answered without the SDK
 * server's per-request machinery (schema parses, an abort controller, promise hops), which costs
 * more than the call itself (`npm run bench -- --only=tool-calls`, mcp-plain and mcp-2026).
 * Everything else, any `tools/call` that is not plain in the revision's {@link PlainCallForm}, and
 * one whose tool the catalogue lacks or the form leaves to it, goes to the SDK server, which gives
 * MCP its semantics. The answers are the same either way (the same table), and a
 * `notifications/cancelled` for a call in flight here stops it with no answer, as the SDK does.
 */
export class DirectBinder {
  private readonly running = new Map<RequestId, ToolCallControls>();

  constructor(
    private readonly methods: McpMethods,
    private readonly scope: ToolCallScope,
    private readonly answer: (message: JSONRPCMessage) => void,
    private readonly form: PlainCallForm,
  ) {}

  /** Answers `message` here when it can (a call, or the cancellation of a call running here); false leaves it to the SDK server. */
  take(message: JSONRPCMessage): boolean {
    const cancelled = cancelledRequestId(message);
    if (cancelled !== undefined) return this.stop(cancelled);
    const call = this.form.callOf(message);
    if (!call || this.running.has(call.id)) return false;
    const controls: ToolCallControls = {};
    let result: MaybePromise<Record<string, unknown>> | undefined;
    try {
      result = this.methods.callTool(call.params, { scope: this.scope, controls, takes: this.form.takes });
    } catch (error) {
      return this.refuse(call.id, error);
    }
    if (result === undefined) return false;
    if (!isPromise(result)) {
      this.reply(call.id, result);
      return true;
    }
    this.running.set(call.id, controls);
    const settle = (answer: () => void) => {
      if (this.running.get(call.id) !== controls) return;
      this.running.delete(call.id);
      answer();
    };
    void result.then(
      (settled) => settle(() => this.reply(call.id, settled)),
      (error: unknown) => settle(() => this.refuse(call.id, error)),
    );
    return true;
  }

  /** The connection ended: every call still running stops, unanswered. */
  stopAll(): void {
    for (const id of [...this.running.keys()]) this.stop(id);
  }

  /** Stops the call `id` running here, unanswered; false when none is. */
  private stop(id: RequestId): boolean {
    const controls = this.running.get(id);
    if (!controls) return false;
    this.running.delete(id);
    controls.cancel?.();
    return true;
  }

  private reply(id: RequestId, result: Record<string, unknown>): void {
    this.answer({ jsonrpc: '2.0', id, result: this.form.resultOf(result as CallToolResult) });
  }

  /** A call refused before it ran (a rate limit): its JSON-RPC error, as the SDK server would send it. */
  private refuse(id: RequestId, error: unknown): true {
    if (!(error instanceof McpError)) throw error;
    const { code, message, data } = error;
    this.answer({ jsonrpc: '2.0', id, error: data === undefined ? { code, message } : { code, message, data } });
    return true;
  }
}

function cancelledRequestId(message: JSONRPCMessage): RequestId | undefined {
  const notification = message as { id?: unknown; method?: unknown; params?: { requestId?: unknown } };
  if (notification.method !== 'notifications/cancelled' || notification.id !== undefined) return undefined;
  const requestId = notification.params?.requestId;
  return typeof requestId === 'string' || typeof requestId === 'number' ? requestId : undefined;
}
