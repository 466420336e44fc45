import { AsyncLocalStorage } from 'async_hooks';
import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/client';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import type { ToolCaller } from '../core/tools/tool-definition';
import { withoutMcpErrorPrefix } from '../core/errors/mcp-error-words';
import { isPlainObject } from '../core/plain-object';

/**
 * The caller of the upstream call whose request is being sent or whose answer is being read;
 * `null` while a 2026 answer of a call that has no caller asks for input.
 */
const callerOfThisStream = new AsyncLocalStorage<ToolCaller | null>();

/** One call in flight: the notifications still being relayed to its caller, and what ends the requests relayed for it. */
interface CallInFlight {
  relays: Promise<void>;
  ended: AbortController;
}

/**
 * Who a message from an upstream is for: log messages and elicitation, sampling or roots requests that
 * an upstream sends while a tool call runs belong to that call's caller, but MCP 2025 does not
 * say which call they belong to. Over Streamable HTTP they come on the call's own response
 * stream, which is read in the call's asynchronous context, so the caller is known exactly.
 * Otherwise (a stdio or SSE upstream, or the standalone GET stream) they go to the caller only
 * while exactly one call is in flight on that upstream; with several, nobody can tell, and
 * nothing is relayed. A 2026 upstream asks for input in the answer of the call itself
 * (`input_required`), so its requests always go to that call's caller ({@link within}); it is told
 * what that caller's client declared ({@link declaredForThisRequest}), and a refusal for want of
 * more (-32021) ends the caller's call with it.
 */
export class UpstreamCallers {
  /** The callers of the calls in flight. */
  private readonly inFlight = new Map<ToolCaller, CallInFlight>();
  /** The caller of each call in flight, by the signal its request was sent with. */
  private readonly bySignal = new WeakMap<AbortSignal, ToolCaller>();

  /**
   * Runs `call` (one request to the upstream, sent with `signal`) on behalf of `caller`, and
   * answers, or fails, once what the upstream sent the caller before answering has been relayed,
   * so the caller gets it in order. Requests relayed for the call that are still unanswered when it
   * ends are withdrawn: the upstream's own cancellation of them may never arrive (its call's
   * stream is gone), and the caller must hear it before the call's answer. When `signal` stops
   * the call, they are withdrawn once the SDK has rejected it, which it does after sending the
   * upstream the call's cancellation: the upstream is sent that its call was cancelled before
   * the answer that withdraws its question, which otherwise reads as a refusal out of the blue.
   */
  async during<T>(caller: ToolCaller | undefined, signal: AbortSignal, call: () => Promise<T>): Promise<T> {
    if (!caller) return call();
    const entry: CallInFlight = { relays: Promise.resolve(), ended: new AbortController() };
    this.inFlight.set(caller, entry);
    this.bySignal.set(signal, caller);
    try {
      const result = await callerOfThisStream.run(caller, call);
      await entry.relays;
      return result;
    } catch (error) {
      await entry.relays;
      const required = requiredCapabilitiesOf(error);
      if (required) caller.missingCapabilities?.(required, withoutMcpErrorPrefix((error as Error).message));
      throw error;
    } finally {
      this.inFlight.delete(caller);
      this.bySignal.delete(signal);
      entry.ended.abort();
    }
  }

  /**
   * Runs `fulfil` (the SDK answering a 2026 `input_required` result of the request sent with
   * `signal`) as the caller of that request, and as nobody when it has none: the SDK reads that
   * answer wherever the upstream's messages arrive (a stdio child's pipe, for one), outside the
   * call's asynchronous context, but it knows which request it answered.
   */
  within<T>(signal: AbortSignal | undefined, fulfil: () => T): T {
    return callerOfThisStream.run((signal && this.bySignal.get(signal)) ?? null, fulfil);
  }

  /**
   * What the client of the request being sent now declared it can be asked, when its caller says
   * (a 2026 client declares it with each request): an upstream should not ask it more.
   */
  declaredForThisRequest(): Record<string, unknown> | undefined {
    const caller = callerOfThisStream.getStore();
    return caller?.declaredCapabilities?.();
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
    if (exact === null) return undefined;
    if (exact && this.inFlight.has(exact)) return exact;
    if (this.inFlight.size !== 1) return undefined;
    return this.inFlight.keys().next().value;
  }

  /**
   * Relays a request of the upstream's to the caller, until the upstream withdraws it or the call
   * it came with ends; the caller's refusal, or a refusal when there is nobody to ask, as the
   * error the upstream is answered with. `key` is the name a 2026 upstream gave the question in
   * its `input_required` answer, which a 2026 caller asks its own client under.
   */
  async request(
    label: string,
    method: string,
    params: Record<string, unknown> | undefined,
    signal: AbortSignal,
    key?: string,
  ): Promise<Record<string, unknown>> {
    const caller = this.current();
    if (!caller?.request) {
      const why = caller ? 'its caller cannot be asked' : 'the gateway cannot tell which call it belongs to';
      throw new ProtocolError(ProtocolErrorCode.InvalidRequest, `${method} from ${label} is not relayed: ${why}`);
    }
    const ended = this.inFlight.get(caller)!.ended.signal;
    try {
      return await caller.request(method, params, AbortSignal.any([signal, ended]), key);
    } catch (error) {
      if (ended.aborted && !signal.aborted) {
        throw new ProtocolError(ProtocolErrorCode.InvalidRequest, `${method} was withdrawn: the tool call it came with has ended`);
      }
      if (error instanceof McpError) throw new ProtocolError(error.code, withoutMcpErrorPrefix(error.message), error.data);
      throw error;
    }
  }

  /**
   * The roots of the caller, for an upstream's `roots/list`: asked of the caller's client only
   * when the request is known to be that call's (it came on the call's own stream, or in its 2026
   * answer), else none. Upstreams ask for roots when they connect, or when they please, not only
   * for a call, so the guess that gives elicitation to the one call in flight would end an
   * unrelated call of a 2026 client that has no roots. None too when the caller is no MCP client
   * (a model's turn, which refuses with a plain error). A client's own refusal stays one.
   */
  async roots(label: string, params: Record<string, unknown> | undefined, signal: AbortSignal, key?: string): Promise<Record<string, unknown>> {
    const exact = callerOfThisStream.getStore();
    if (!exact?.request || !this.inFlight.has(exact)) return { roots: [] };
    try {
      return await this.request(label, 'roots/list', params, signal, key);
    } catch (error) {
      if (error instanceof ProtocolError || signal.aborted) throw error;
      return { roots: [] };
    }
  }
}

/** What an upstream's MissingRequiredClientCapability refusal (-32021) says the request needed; `undefined` for any other failure. */
function requiredCapabilitiesOf(error: unknown): Record<string, unknown> | undefined {
  if (!(error instanceof ProtocolError) || error.code !== ProtocolErrorCode.MissingRequiredClientCapability) return undefined;
  const required = (error.data as { requiredCapabilities?: unknown } | undefined)?.requiredCapabilities;
  return isPlainObject(required) ? required : undefined;
}
