import {
  CLIENT_CAPABILITIES_META_KEY,
  Client,
  Implementation,
  McpSubscription,
  ProtocolError,
  ProtocolErrorCode,
  RequestOptions,
  SubscriptionFilter,
} from '@modelcontextprotocol/client';
import { CreateTaskResultSchema } from '@modelcontextprotocol/sdk/experimental/tasks/types.js';
import { CallToolRequest, CallToolResult, CallToolResultSchema, CancelTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import type { UpstreamCallers } from './upstream-callers';

/** Most pages read of one list of an upstream's (`tools/list`...): past them the list fails, a bound on a server that pages forever. */
const MAX_PAGES = 100;

/** A subscription to one resource's updates at the upstream, and how to end it. */
export type EndSubscription = () => Promise<void>;

/**
 * The SDK 2.x client the gateway holds for one upstream, which it speaks to in whichever MCP
 * revision the upstream speaks: 2026-07-28 when it answers `server/discover`, else the 2025
 * `initialize` handshake (`negotiate: false` goes straight to it). It declares elicitation,
 * sampling and roots (without `listChanged`: no change of a caller's roots is relayed), which the
 * callers answer (see {@link UpstreamCallers}), and hides what the eras do
 * differently: how liveness is checked, how change notifications are asked for.
 */
export class UpstreamClient extends Client {
  constructor(
    clientInfo: Implementation,
    private readonly callers: UpstreamCallers,
    negotiate: boolean,
  ) {
    super(clientInfo, {
      capabilities: { elicitation: {}, sampling: {}, roots: {} },
      versionNegotiation: { mode: negotiate ? 'auto' : 'legacy' },
      listMaxPages: MAX_PAGES,
    });
  }

  /** Notifications handed over whose handlers the SDK has not run yet. */
  private notificationsWaiting = 0;
  /** Settles once every notification handed over so far has been handled. */
  private notificationsHandled: Promise<void> = Promise.resolve();

  get modern(): boolean {
    return this.getProtocolEra() === 'modern';
  }

  /**
   * On 2026, the capabilities each request declares are those of the gateway that its caller's
   * client declared too, when the caller says (a 2026 client declares them with each request):
   * an upstream then asks only what that client can answer, and refuses itself (-32021) what it
   * cannot serve without more, as it would the client directly.
   */
  protected override _outboundMetaEnvelope(): Readonly<Record<string, unknown>> | undefined {
    const envelope = super._outboundMetaEnvelope();
    const declared = this.callers.declaredForThisRequest();
    if (!envelope || !declared) return envelope;
    const own = (envelope[CLIENT_CAPABILITIES_META_KEY] ?? {}) as Record<string, unknown>;
    const shared = Object.fromEntries(Object.entries(own).filter(([capability]) => Boolean(declared[capability])));
    return { ...envelope, [CLIENT_CAPABILITIES_META_KEY]: shared };
  }

  /**
   * The SDK runs a notification's handler a microtask after the notification arrives, but handles
   * an answer at once, which ends its call and drops the call's progress handler: progress that
   * comes with the answer (in one chunk of a stdio pipe, or from any transport handing over the
   * messages it holds in one go) would be lost, and log messages handled after the answer. So an
   * answer that comes while notifications wait for their handlers waits for them: whatever an
   * upstream sends before an answer is handled before it, on every transport, and relayed to the
   * call's caller before the answer ({@link UpstreamCallers.during}).
   */
  protected override _onnotification(...args: Parameters<Client['_onnotification']>): void {
    super._onnotification(...args);
    this.notificationsWaiting += 1;
    // Queued after the microtask the SDK has just queued for the handler, so it runs once that one has.
    this.notificationsHandled = new Promise((resolve) =>
      queueMicrotask(() => {
        this.notificationsWaiting -= 1;
        resolve();
      }),
    );
  }

  protected override _onresponse(...args: Parameters<Client['_onresponse']>): void {
    if (this.notificationsWaiting === 0) return super._onresponse(...args);
    // Answers that wait keep their order: each waits for the notifications before it, and those before an earlier answer came first.
    this.notificationsHandled.then(() => super._onresponse(...args)).catch((error: unknown) => this.onerror?.(error as Error));
  }

  /**
   * The input a 2026 upstream asks for in an answer (`input_required`) is asked, through the
   * handlers set with `setRequestHandler`, of the caller of the request it answered.
   */
  protected override _resolveNonCompleteResult(...args: Parameters<Client['_resolveNonCompleteResult']>): Promise<unknown> {
    return this.callers.within(args[1].options?.signal, () => super._resolveNonCompleteResult(...args));
  }

  /**
   * Calls a tool the upstream runs only as a task (2025-11-25: `execution.taskSupport:
   * "required"`): `tools/call` with `task` makes the task, and `tasks/result` waits for its end,
   * carrying what the task asks its client meanwhile (to the handlers set with
   * `setRequestHandler`, as a plain call's questions). Stopped by `options.signal`, the task is
   * cancelled at the upstream (`tasks/cancel`), since ending the wait does not end the task.
   * A 2026 upstream's tasks are server-directed and never required, so this is 2025 only.
   */
  async callToolAsTask(params: CallToolRequest['params'], ttlMs: number, options: RequestOptions): Promise<CallToolResult> {
    if (this.modern)
      throw new ProtocolError(ProtocolErrorCode.InvalidRequest, `${params.name} runs only as a task, which a 2026-07-28 upstream does not ask for`);
    const { task } = await this.request({ method: 'tools/call', params: { ...params, task: { ttl: ttlMs } } }, CreateTaskResultSchema, options);
    const cancel = () => void this.request({ method: 'tasks/cancel', params: { taskId: task.taskId } }, CancelTaskResultSchema).catch(() => undefined);
    options.signal?.addEventListener('abort', cancel, { once: true });
    try {
      return await this.request({ method: 'tasks/result', params: { taskId: task.taskId } }, CallToolResultSchema, options);
    } finally {
      options.signal?.removeEventListener('abort', cancel);
    }
  }

  /** Resolves once the upstream has answered a request of no consequence: `ping`, or `server/discover` on 2026, which has no ping. */
  async answers(options: RequestOptions): Promise<void> {
    await (this.modern ? this.discover(options) : this.ping(options));
  }

  /**
   * On 2026, opens the `subscriptions/listen` stream that carries the `list_changed`
   * notifications the upstream's capabilities announce (on 2025 they come unasked); they reach
   * the handlers set with `setNotificationHandler`. `undefined` when there is nothing to listen to.
   */
  async listenForChanges(options: RequestOptions): Promise<McpSubscription | undefined> {
    const capabilities = this.getServerCapabilities();
    const filter: SubscriptionFilter = {
      ...(capabilities?.tools?.listChanged && { toolsListChanged: true }),
      ...(capabilities?.prompts?.listChanged && { promptsListChanged: true }),
      ...(capabilities?.resources?.listChanged && { resourcesListChanged: true }),
    };
    if (!this.modern || Object.keys(filter).length === 0) return undefined;
    return this.listen(filter, options);
  }

  /** Subscribes to the updates of `uri` (a `subscriptions/listen` stream of its own on 2026, `resources/subscribe` on 2025). */
  async subscribeTo(uri: string, options: RequestOptions): Promise<EndSubscription> {
    if (!this.modern) {
      await this.subscribeResource({ uri }, options);
      return async () => void (await this.unsubscribeResource({ uri }, { timeout: options.timeout }));
    }
    const subscription = await this.listen({ resourceSubscriptions: [uri] }, options);
    if (!subscription.honoredFilter.resourceSubscriptions?.includes(uri)) {
      await subscription.close();
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `the subscription to ${uri} was not accepted`);
    }
    return () => subscription.close();
  }
}
