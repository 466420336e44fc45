import type { Logger } from '@nestjs/common';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  CompleteRequest,
  ErrorCode,
  McpError,
  Prompt,
  PromptListChangedNotificationSchema,
  Resource,
  ResourceListChangedNotificationSchema,
  ResourceTemplate,
  ResourceUpdatedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import type { ContextCatalogueService } from '../core/context/context-catalogue.service';
import type { ContextListKind, ContextRequestOptions, ContextSource } from '../core/context/context-source';
import { redactStrings } from '../core/logging/redact';
import { activeTraceMeta } from '../core/tracing/trace-context';
import { allPages } from './all-pages';
import { describeOversizedAnswer, oversizedAnswerOf } from './oversized-answer';
import { describeUpstreamError } from './upstream-errors';
import type { UpstreamServerConfig } from './upstream-servers.config';
import type { UpstreamLinkState } from './upstream-tool-sync';

/** The active span (the request's, when traced) as the upstream's parent, in `_meta`, as a tool call sends it. */
function traced(): { _meta?: Record<string, string> } {
  const meta = activeTraceMeta();
  return meta ? { _meta: meta } : {};
}

/**
 * One upstream's resources, resource templates and prompts in the {@link ContextCatalogueService}:
 * read when it connects (those its capabilities announce), read again on its `list_changed`,
 * withdrawn when it goes away. Requests are sent to it with the caller's cancellation, and every
 * failure becomes an MCP error that names the upstream without its secrets.
 */
export class UpstreamContextSync {
  private readonly id: string;
  private resources: readonly Resource[] = [];
  private resourceTemplates: readonly ResourceTemplate[] = [];
  private prompts: readonly Prompt[] = [];
  /** Served prompt name -> the upstream's own. */
  private promptNames = new Map<string, string>();
  /** Subscribed URI -> the listeners of its updates; the upstream holds one subscription per URI. */
  private readonly watchers = new Map<string, Set<() => void>>();
  private refreshes: Promise<void> = Promise.resolve();
  private readonly queued = new Set<ContextListKind>();

  constructor(
    private readonly server: UpstreamServerConfig,
    private readonly rank: number,
    private readonly catalogue: ContextCatalogueService,
    private readonly link: UpstreamLinkState,
    private readonly logger: Logger,
    private readonly redact: (text: string) => string,
  ) {
    this.id = `mcp:${server.name}`;
  }

  private get label(): string {
    return `MCP server "${this.server.name}"`;
  }

  /** Relays the upstream's `list_changed` of resources and prompts to a re-read, and its resource updates to their subscribers. */
  listen(client: Client): void {
    client.setNotificationHandler(ResourceListChangedNotificationSchema, () => this.queueRefresh(client, 'resources'));
    client.setNotificationHandler(PromptListChangedNotificationSchema, () => this.queueRefresh(client, 'prompts'));
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, ({ params }) => this.watchers.get(params.uri)?.forEach((listener) => listener()));
  }

  /** Reads every list the upstream's capabilities announce; a list that fails is left empty and logged. */
  async load(client: Client): Promise<void> {
    await Promise.all([this.read(client, 'resources'), this.read(client, 'prompts')]);
  }

  /** Puts what {@link load} read in the catalogue, once the upstream counts as connected, and subscribes again to what was subscribed before a reconnect. */
  connected(client: Client): void {
    this.publish();
    for (const uri of this.watchers.keys()) {
      client.subscribeResource({ uri }, { timeout: this.server.connectTimeoutMs }).catch((error: unknown) => {
        this.logger.warn(`${this.label}: could not subscribe again to ${uri}: ${this.redact(describeUpstreamError(error))}`);
      });
    }
  }

  /** Calls `listener` at each update of `uri`; the first listener of a URI subscribes at the upstream, the last one's leaving unsubscribes. */
  private async subscribe(uri: string, listener: () => void): Promise<() => void> {
    let listeners = this.watchers.get(uri);
    if (!listeners) {
      if (!this.link.connectedClient()?.getServerCapabilities()?.resources?.subscribe) {
        throw new McpError(ErrorCode.MethodNotFound, `${this.label} does not support resource subscriptions`);
      }
      await this.send({ signal: new AbortController().signal }, (client, sdk) => client.subscribeResource({ uri }, sdk));
      listeners = this.watchers.get(uri) ?? new Set();
      this.watchers.set(uri, listeners);
    }
    listeners.add(listener);
    return () => {
      if (!listeners.delete(listener) || listeners.size > 0 || this.watchers.get(uri) !== listeners) return;
      this.watchers.delete(uri);
      this.link
        .connectedClient()
        ?.unsubscribeResource({ uri }, { timeout: this.server.connectTimeoutMs })
        .catch(() => undefined);
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

  private queueRefresh(client: Client, kind: ContextListKind): void {
    if (this.queued.has(kind)) return;
    this.queued.add(kind);
    this.refreshes = this.refreshes.then(async () => {
      this.queued.delete(kind);
      if (client !== this.link.connectedClient()) return;
      await this.read(client, kind);
      if (client === this.link.connectedClient()) this.publish();
    });
  }

  private async read(client: Client, kind: ContextListKind): Promise<void> {
    const capabilities = client.getServerCapabilities();
    if (!capabilities?.[kind]) return;
    const options = { timeout: this.server.connectTimeoutMs };
    try {
      if (kind === 'resources') {
        this.resources = await allPages(
          (cursor) => client.listResources(cursor, options),
          (page) => page.resources,
        );
        this.resourceTemplates = await allPages(
          (cursor) => client.listResourceTemplates(cursor, options),
          (page) => page.resourceTemplates,
        );
      } else {
        const prompts = await allPages(
          (cursor) => client.listPrompts(cursor, options),
          (page) => page.prompts,
        );
        this.promptNames = new Map(prompts.map((prompt) => [`${this.server.prefix}${prompt.name}`, prompt.name]));
        this.prompts = prompts.map((prompt) => ({ ...prompt, name: `${this.server.prefix}${prompt.name}` }));
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
      readResource: (uri, options) => this.send(options, (client, sdk) => client.readResource({ uri, ...traced() }, sdk)),
      getPrompt: (name, args, options) =>
        this.send(options, (client, sdk) => client.getPrompt({ name: this.promptNames.get(name) ?? name, ...(args && { arguments: args }), ...traced() }, sdk)),
      complete: (params, options) => this.send(options, (client, sdk) => client.complete({ ...this.upstreamRef(params), ...traced() }, sdk)),
      subscribe: (uri, listener) => this.subscribe(uri, listener),
    };
    this.catalogue.set(source);
  }

  /** A completion request as the upstream names its prompt. */
  private upstreamRef(params: CompleteRequest['params']): CompleteRequest['params'] {
    const { ref } = params;
    return ref.type === 'ref/prompt' ? { ...params, ref: { ...ref, name: this.promptNames.get(ref.name) ?? ref.name } } : params;
  }

  /** Sends one request with the caller's cancellation and the upstream's call time limit (`callTimeout`); every failure an McpError. */
  private async send<T>(options: ContextRequestOptions, request: (client: Client, sdk: { signal: AbortSignal; timeout: number }) => Promise<T>): Promise<T> {
    const client = this.link.connectedClient();
    if (!client) throw new McpError(ErrorCode.InternalError, `${this.label} is not connected; try again later`);
    try {
      const result = await request(client, { signal: options.signal, timeout: this.server.callTimeoutMs });
      return redactStrings(result, this.redact);
    } catch (error) {
      throw this.failure(client, error, options.signal);
    }
  }

  private failure(client: Client, error: unknown, signal: AbortSignal): unknown {
    if (signal.aborted) return error;
    const oversized = oversizedAnswerOf(error);
    if (oversized) return new McpError(ErrorCode.InternalError, `${this.label}: ${describeOversizedAnswer(oversized)}`);
    if (error instanceof McpError) {
      // The upstream's own answer (an unknown URI, bad arguments): its code, its words without secrets.
      const message = this.redact(error.message.replace(/^MCP error -?\d+: /, ''));
      if (error.code === ErrorCode.ConnectionClosed) return new McpError(error.code, `${this.label} went away during the request`);
      return new McpError(error.code, `${this.label}: ${message}`, redactStrings(error.data, this.redact));
    }
    this.link.lost(client, error);
    return new McpError(ErrorCode.InternalError, `${this.label} cannot be reached: ${this.redact(describeUpstreamError(error))}`);
  }
}
