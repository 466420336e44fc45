import type { CallToolResult, Implementation, JSONRPCMessage, RequestId } from '@modelcontextprotocol/sdk/types.js';
import { SERVER_INFO_META_KEY } from '@modelcontextprotocol/server';
import type { ToolDefinition } from '../../../core/tools/tool-definition';
import { PlainCallForm, PlainToolCall, plainToolCall, talksToCaller } from '../direct-binder';

/**
 * The 2026-07-28 revision's plain `tools/call` on one connection, which the direct binder answers:
 * its params are a name, an arguments object and a `_meta` that is exactly an envelope the
 * connection's server has answered with a result before (so nothing in it asks for more than that
 * envelope did: no progress token, no trace context, nothing the SDK would refuse), and its tool
 * neither talks to its caller nor runs as a task (the client's capabilities decide both). Clients
 * send the same envelope with every request, so after the first answer their calls take this
 * path. The result is stamped as the SDK stamps every 2026 result: `resultType: "complete"`, the
 * server's identity in `_meta`.
 */
export class PlainCall2026 implements PlainCallForm {
  /** The envelope (its JSON) of a request the server answered with a result. */
  private accepted?: string;
  /** The envelopes of the requests the server has not answered yet, while none is accepted. */
  private readonly handed = new Map<RequestId, string>();

  /** The `_meta` of a result that has none of its own: shared, as results are only serialized. */
  private readonly identity: Record<string, unknown>;

  constructor(private readonly serverInfo: Implementation) {
    this.identity = { [SERVER_INFO_META_KEY]: serverInfo };
  }

  /** The server was handed request `id`, which carried `envelope`. */
  handedToServer(id: RequestId, envelope: Record<string, unknown>): void {
    if (this.accepted === undefined) this.handed.set(id, JSON.stringify(envelope));
  }

  /** The server answered request `id`, with a result or an error. */
  answered(id: RequestId, withResult: boolean): void {
    const envelope = this.handed.get(id);
    if (envelope === undefined) return;
    this.handed.delete(id);
    if (withResult) {
      this.accepted = envelope;
      this.handed.clear();
    }
  }

  callOf(message: JSONRPCMessage): PlainToolCall | undefined {
    if (this.accepted === undefined) return undefined;
    const call = plainToolCall(message);
    return call && JSON.stringify(call.params._meta) === this.accepted ? call : undefined;
  }

  resultOf(result: CallToolResult): CallToolResult {
    const _meta = result._meta === undefined ? this.identity : { ...result._meta, [SERVER_INFO_META_KEY]: this.serverInfo };
    return { ...result, resultType: 'complete', _meta };
  }

  takes(tool: ToolDefinition): boolean {
    return !talksToCaller(tool) && !tool.longRunning;
  }
}
