import { AsyncLocalStorage } from 'async_hooks';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { ToolCaller } from '../core/tools/tool-definition';

/** The caller of the upstream call whose request is being sent or whose answer stream is being read. */
const callerOfThisStream = new AsyncLocalStorage<ToolCaller>();

/**
 * Who a message from an upstream is for: log messages and elicitation or sampling requests that
 * an upstream sends while a tool call runs belong to that call's caller, but MCP does not say
 * which call they belong to. Over Streamable HTTP they come on the call's own response stream,
 * which is read in the call's asynchronous context, so the caller is known exactly. Otherwise (a
 * stdio or SSE upstream, or the standalone GET stream) they go to the caller only while exactly
 * one call is in flight on that upstream; with several, nobody can tell, and nothing is relayed.
 */
/** One call in flight: the notifications still being relayed to its caller, and what ends the requests relayed for it. */
interface CallInFlight {
  relays: Promise<void>;
  ended: AbortController;
}

export class UpstreamCallers {
  /** The callers of the calls in flight. */
  private readonly inFlight = new Map<ToolCaller, CallInFlight>();

  /**
   * Runs `call` (one request to the upstream) on behalf of `caller`, and answers once what the
   * upstream sent the caller before answering has been relayed, so the caller gets it in order.
   * Requests relayed for the call that are still unanswered when it ends, or the moment `signal`
   * stops it, are withdrawn: the upstream's own cancellation of them may never arrive (its call's
   * stream is gone), and the caller must hear it before the call's answer.
   */
  async during<T>(caller: ToolCaller | undefined, signal: AbortSignal, call: () => Promise<T>): Promise<T> {
    if (!caller) return call();
    const entry: CallInFlight = { relays: Promise.resolve(), ended: new AbortController() };
    const stop = () => entry.ended.abort();
    signal.addEventListener('abort', stop, { once: true });
    this.inFlight.set(caller, entry);
    try {
      const result = await callerOfThisStream.run(caller, call);
      await entry.relays;
      return result;
    } finally {
      signal.removeEventListener('abort', stop);
      this.inFlight.delete(caller);
      entry.ended.abort();
    }
  }

  /** Relays a notification to `caller` after those relayed to it before. */
  relay(caller: ToolCaller, send: () => Promise<void> | undefined): void {
    const entry = this.inFlight.get(caller);
    if (entry) entry.relays = entry.relays.then(send).catch(() => undefined);
    else void send()?.catch(() => undefined);
  }

  /** The caller the message being handled now is for, or `undefined` when it cannot be told. */
  current(): ToolCaller | undefined {
    const exact = callerOfThisStream.getStore();
    if (exact && this.inFlight.has(exact)) return exact;
    if (this.inFlight.size !== 1) return undefined;
    return this.inFlight.keys().next().value;
  }

  /**
   * Relays a request of the upstream's to the caller, until the upstream withdraws it or the call
   * it came with ends; an McpError when there is nobody to ask.
   */
  request(label: string, method: string, params: Record<string, unknown> | undefined, signal: AbortSignal): Promise<Record<string, unknown>> {
    const caller = this.current();
    if (!caller?.request) {
      const why = caller ? 'its caller cannot be asked' : 'the gateway cannot tell which call it belongs to';
      throw new McpError(ErrorCode.InvalidRequest, `${method} from ${label} is not relayed: ${why}`);
    }
    return caller.request(method, params, AbortSignal.any([signal, this.inFlight.get(caller)!.ended.signal]));
  }
}
