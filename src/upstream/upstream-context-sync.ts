import type { Logger } from '@nestjs/common';
import {
  CompleteRequest,
  CompleteResult,
  ErrorCode,
  GetPromptResult,
  McpError,
  Prompt,
  ReadResourceResult,
  Resource,
  ResourceTemplate,
} from '@modelcontextprotocol/sdk/types.js';
import type { ContextCatalogueService } from '../core/context/context-catalogue.service';
import type { ContextListKind, ContextRequestOptions, ContextSource } from '../core/context/context-source';
import { redactStrings } from '../core/logging/redact';
import { activeTraceMeta } from '../core/tracing/trace-context';
import { describeOversizedAnswer, oversizedAnswerOf } from './oversized-answer';
import type { UpstreamCallers } from './upstream-callers';
import type { EndSubscription, UpstreamClient } from './upstream-client';
import { describeUpstreamError, isConnectionClosed, refusalOf } from './upstream-errors';
import type { UpstreamServerConfig } from './upstream-servers.config';
import type { UpstreamLinkState } from './upstream-tool-sync';

/** The active span (the request's, when traced) as the upstream's parent, in `_meta`, as a tool call sends it. */
function traced(): { _meta?: Record<string, string> } {
  const meta = activeTraceMeta();
  return meta ? { _meta: meta } : {};
}

/** One URI subscribed to at the upstream: the listeners of its updates, and how the upstream's subscription ends. */
interface Watch {
  listeners: Set<() => void>;
  end?: EndSubscription;
}

/**
 * One upstream's resources, resource templates and prompts in the {@link ContextCatalogueService}:
 * read when it connects (those its capabilities announce), read again on its `list_changed`
 * (one that comes while they are first read makes them read once more), withdrawn when it goes
 * away. Requests are sent to it with the caller's cancellation, and every failure becomes an MCP
 * error that names the upstream without its secrets.
 */
export class UpstreamContextSync {
  private readonly id: string;
  private resources: readonly Resource[] = [];
  private resourceTemplates: readonly ResourceTemplate[] = [];
  private prompts: readonly Prompt[] = [];
  /** Served prompt name -> the upstream's own. */
  private promptNames = new Map<string, string>();
  /** Subscribed URI -> its watch; the upstream holds one subscription per URI. */
  private readonly watches = new Map<string, Watch>();
  private refreshes: Promise<void> = Promise.resolve();
  private readonly queued = new Set<ContextListKind>();
  /** The lists whose `list_changed` came while the upstream was not yet connected. */
  private readonly stale = new Set<ContextListKind>();

  constructor(
    private readonly server: UpstreamServerConfig,
    private readonly rank: number,
    private readonly catalogue: ContextCatalogueService,
    private readonly link: UpstreamLinkState,
    private readonly logger: Logger,
    private readonly redact: (text: string) => string,
    private readonly callers: UpstreamCallers,
  ) {
    this.id = `mcp:${server.name}`;
  }

  private get label(): string {
    return `MCP server "${this.server.name}"`;
  }

  /** Relays a new client's `list_changed` of resources and prompts to a re-read, and its resource updates to their subscribers. */
  listen(client: UpstreamClient): void {
    this.stale.clear();
    client.setNotificationHandler('notifications/resources/list_changed', () => this.changed(client, 'resources'));
    client.setNotificationHandler('notifications/prompts/list_changed', () => this.changed(client, 'prompts'));
    client.setNotificationHandler('notifications/resources/updated', ({ params }) => this.watches.get(params.uri)?.listeners.forEach((listener) => listener()));
  }

  /** Reads every list the upstream's capabilities announce; a list that fails is left empty and logged. */
  async load(client: UpstreamClient): Promise<void> {
    await Promise.all([this.read(client, 'resources'), this.read(client, 'prompts')]);
  }

  /**
   * Puts what {@link load} read in the catalogue, once the upstream counts as connected, reads
   * again what changed meanwhile, and subscribes again to what was subscribed before a reconnect.
   */
  connected(client: UpstreamClient): void {
    this.publish();
    for (const kind of this.stale) this.queueRefresh(client, kind);
    this.stale.clear();
    for (const [uri, watch] of this.watches) {
      watch.end = undefined;
      client
        .subscribeTo(uri, { timeout: this.server.connectTimeoutMs })
        .then((end) => (watch.end = end))
        .catch((error: unknown) => {
          this.logger.warn(`${this.label}: could not subscribe again to ${uri}: ${this.redact(describeUpstreamError(error))}`);
        });
    }
  }

  /** Reads every list again (changes may have been missed while the upstream's change stream was down). */
  refreshAll(client: UpstreamClient): void {
    this.queueRefresh(client, 'resources');
    this.queueRefresh(client, 'prompts');
  }

  /** Calls `listener` at each update of `uri`; the first listener of a URI subscribes at the upstream, the last one's leaving unsubscribes. */
  private async subscribe(uri: string, listener: () => void): Promise<() => void> {
    let watch = this.watches.get(uri);
    if (!watch) {
      if (!this.link.connectedClient()?.getServerCapabilities()?.resources?.subscribe) {
        throw new McpError(ErrorCode.MethodNotFound, `${this.label} does not support resource subscriptions`);
      }
      const end = await this.send({ signal: new AbortController().signal }, (client, sdk) => client.subscribeTo(uri, sdk));
      watch = this.watches.get(uri) ?? { listeners: new Set(), end };
      this.watches.set(uri, watch);
    }
    const { listeners } = watch;
    listeners.add(listener);
    return () => {
      if (!listeners.delete(listener) || listeners.size > 0 || this.watches.get(uri) !== watch) return;
      this.watches.delete(uri);
      void watch.end?.().catch(() => undefined);
    };
  }

  /** The upstream went away: what it offered leaves the catalogue. */
  withdraw(): void {
    this.resources = this.resourceTemplates = this.prompts = [];
    this.promptNames = new Map();
    this.catalogue.remove(this.id);
  }

  /** How many resources, templates and prompts it offers (for `/health`). */
  get counts(): { resources: number; resource_templates: number; prompts: number } {
    return { resources: this.resources.length, resource_templates: this.resourceTemplates.length, prompts: this.prompts.length };
  }

  private changed(client: UpstreamClient, kind: ContextListKind): void {
    if (client === this.link.connectedClient()) this.queueRefresh(client, kind);
    else this.stale.add(kind);
  }

  private queueRefresh(client: UpstreamClient, kind: ContextListKind): void {
    if (this.queued.has(kind)) return;
    this.queued.add(kind);
    this.refreshes = this.refreshes.then(async () => {
      this.queued.delete(kind);
      if (client !== this.link.connectedClient()) return;
      await this.read(client, kind);
      if (client === this.link.connectedClient()) this.publish();
    });
  }

  private async read(client: UpstreamClient, kind: ContextListKind): Promise<void> {
    const capabilities = client.getServerCapabilities();
    if (!capabilities?.[kind]) return;
    // Always read afresh (and kept by the SDK as what it checks answers against).
    const options = { timeout: this.server.connectTimeoutMs, cacheMode: 'refresh' } as const;
    try {
      if (kind === 'resources') {
        this.resources = (await client.listResources(undefined, options)).resources as Resource[];
        this.resourceTemplates = (await client.listResourceTemplates(undefined, options)).resourceTemplates as ResourceTemplate[];
      } else {
        const { prompts } = await client.listPrompts(undefined, options);
        this.promptNames = new Map(prompts.map((prompt) => [`${this.server.prefix}${prompt.name}`, prompt.name]));
        this.prompts = prompts.map((prompt) => ({ ...prompt, name: `${this.server.prefix}${prompt.name}` })) as Prompt[];
      }
    } catch (error) {
      this.logger.warn(`${this.label}: could not read its ${kind}: ${this.redact(describeUpstreamError(error))}`);
    }
  }

  private publish(): void {
    const source: ContextSource = {
      id: this.id,
      label: this.label,
      rank: this.rank,
      resources: this.resources,
      resourceTemplates: this.resourceTemplates,
      prompts: this.prompts,
      // Never from the SDK's cache: the client is shared by every caller, and the cache is not theirs.
      readResource: (uri, options) =>
        this.send(options, (client, sdk) => client.readResource({ uri, ...traced() }, { ...sdk, cacheMode: 'bypass' }) as Promise<ReadResourceResult>),
      getPrompt: (name, args, options) =>
        this.send(
          options,
          (client, sdk) =>
            client.getPrompt({ name: this.promptNames.get(name) ?? name, ...(args && { arguments: args }), ...traced() }, sdk) as Promise<GetPromptResult>,
        ),
      complete: (params, options) =>
        this.send(options, (client, sdk) => client.complete({ ...this.upstreamRef(params), ...traced() }, sdk) as Promise<CompleteResult>),
      subscribe: (uri, listener) => this.subscribe(uri, listener),
    };
    this.catalogue.set(source);
  }

  /** A completion request as the upstream names its prompt. */
  private upstreamRef(params: CompleteRequest['params']): CompleteRequest['params'] {
    const { ref } = params;
    return ref.type === 'ref/prompt' ? { ...params, ref: { ...ref, name: this.promptNames.get(ref.name) ?? ref.name } } : params;
  }

  /**
   * Sends one request with the caller's cancellation and the upstream's call time limit
   * (`callTimeout`), as the caller's (so what the upstream asks while answering goes to it);
   * every failure an McpError.
   */
  private async send<T>(
    options: ContextRequestOptions,
    request: (client: UpstreamClient, sdk: { signal: AbortSignal; timeout: number }) => Promise<T>,
  ): Promise<T> {
    const client = this.link.connectedClient();
    if (!client) throw new McpError(ErrorCode.InternalError, `${this.label} is not connected; try again later`);
    const { signal } = options;
    try {
      const result = await this.callers.during(options.caller, signal, () => request(client, { signal, timeout: this.server.callTimeoutMs }));
      return redactStrings(result, this.redact);
    } catch (error) {
      throw this.failure(client, error, signal);
    }
  }

  private failure(client: UpstreamClient, error: unknown, signal: AbortSignal): unknown {
    if (signal.aborted) return error;
    const oversized = oversizedAnswerOf(error);
    if (oversized) return new McpError(ErrorCode.InternalError, `${this.label}: ${describeOversizedAnswer(oversized)}`);
    if (isConnectionClosed(error)) return new McpError(ErrorCode.ConnectionClosed, `${this.label} went away during the request`);
    const refusal = refusalOf(error);
    // The upstream's own answer (an unknown URI, bad arguments): its code, its words without secrets.
    if (refusal) return new McpError(refusal.code, `${this.label}: ${this.redact(refusal.message)}`, redactStrings(refusal.data, this.redact));
    this.link.lost(client, error);
    return new McpError(ErrorCode.InternalError, `${this.label} cannot be reached: ${this.redact(describeUpstreamError(error))}`);
  }
}
