import type { Logger } from '@nestjs/common';
import { CreateMessageResult, ElicitResult, ListRootsResult, ProtocolError, SdkError, SdkErrorCode } from '@modelcontextprotocol/client';
import type { Implementation } from '@modelcontextprotocol/sdk/types.js';
import { UpstreamCallers } from './upstream-callers';
import { UpstreamClient } from './upstream-client';
import type { ContextCatalogueService } from '../core/context/context-catalogue.service';
import type { ToolRegistryService } from '../core/tools/tool-registry.service';
import { retryDelayMs } from './backoff';
import { describeOversizedAnswer, DroppedMessage } from './oversized-answer';
import { brief, describeUpstreamError, redactorFor } from './upstream-errors';
import type { SkippedTool } from './upstream.mapper';
import type { UpstreamServerConfig, UpstreamTransport } from './upstream-servers.config';
import { UpstreamContextSync } from './upstream-context-sync';
import { UpstreamLinkState, UpstreamToolSync } from './upstream-tool-sync';
import { openLink, refusesStreamableHttp, UpstreamLink } from './upstream-transport';

/**
 * - `connecting`: the first attempt is under way;
 * - `connected`: its tools are in the catalogue;
 * - `reconnecting`: an attempt after a failure or a loss is under way;
 * - `failed`: the last attempt failed, or the connection was lost; the next is due at `next_retry_at`;
 * - `disabled`: `"disabled": true` in the file.
 */
export type UpstreamState = 'connecting' | 'connected' | 'reconnecting' | 'failed' | 'disabled';

/** One upstream on `/health`. */
export interface UpstreamStatus {
  state: UpstreamState;
  transport: UpstreamTransport;
  tools: number;
  skipped_tools?: SkippedTool[];
  resources: number;
  resource_templates: number;
  prompts: number;
  /** Calls sent and not yet answered. */
  calls_in_flight: number;
  /** The stdio child's process id, while it runs. */
  pid?: number;
  connected_since?: string;
  /** Attempts that failed since the last connection. */
  failures: number;
  /** Times it came back after a loss or a failed start, since the gateway started. */
  reconnects: number;
  last_error?: string;
  next_retry_at?: string;
}

/** What every upstream connection shares: the catalogue and the gateway's timings. */
export interface UpstreamContext {
  registry: ToolRegistryService;
  /** Where its resources and prompts go. */
  contextCatalogue: ContextCatalogueService;
  logger: Logger;
  /** The gateway's name and version, announced to upstreams as the client's. */
  clientInfo: Implementation;
  pingIntervalMs: number;
  retryMinMs: number;
  retryMaxMs: number;
  /** Most bytes one message from an upstream may be; a larger answer fails its call alone. */
  maxResultBytes: number;
}

/** A change stream that ends sooner than this after it opened is not opened again: the upstream counts as gone. */
const CHANGE_STREAM_MIN_LIFE_MS = 5000;

/**
 * One upstream MCP server, kept connected: its tools join the catalogue while it is connected
 * ({@link UpstreamToolSync}) and are withdrawn the moment it goes away (the process exits, the
 * connection closes, a ping or a call cannot reach it). It is then retried with exponential
 * backoff, forever, at most `retryMaxMs` apart; a stdio server is started again.
 */
export class UpstreamConnection implements UpstreamLinkState {
  private state: UpstreamState;
  private readonly redact: (text: string) => string;
  private readonly tools: UpstreamToolSync;
  private readonly contextSync: UpstreamContextSync;
  private readonly callers = new UpstreamCallers();
  /** The client of the attempt under way or of the live connection. */
  private client?: UpstreamClient;
  private link?: UpstreamLink;
  private everConnected = false;
  private failures = 0;
  private reconnects = 0;
  /** Where the backoff is: reset only by a connection that held, so a server that dies at once backs off too. */
  private backoffStep = 0;
  /** A `list_changed` came while the first listing was under way. */
  private listStale = false;
  private connectedSince?: number;
  private lastError?: string;
  private lastStderrLine?: string;
  private nextRetryAt?: number;
  private retryTimer?: NodeJS.Timeout;
  private pingTimer?: NodeJS.Timeout;
  private checkingAlive = false;
  private readonly closing = new Set<Promise<void>>();
  private stopped = false;

  /** `rank`: its place in the servers file; the first server listing a resource URI owns it. */
  constructor(
    readonly server: UpstreamServerConfig,
    private readonly context: UpstreamContext,
    rank = 0,
  ) {
    this.state = server.disabled ? 'disabled' : 'connecting';
    this.redact = redactorFor(server);
    this.tools = new UpstreamToolSync(server, `mcp:${server.name}`, context.registry, this, context.logger, this.redact, this.callers);
    this.contextSync = new UpstreamContextSync(server, rank, context.contextCatalogue, this, context.logger, this.redact, this.callers);
  }

  /** Starts connecting in the background; never waits and never throws. */
  start(): void {
    if (this.state !== 'disabled') void this.attempt();
  }

  /** Stops retrying and closes the connection; resolves once a stdio child has exited. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    clearTimeout(this.pingTimer);
    this.release();
    await Promise.all(this.closing);
  }

  status(): UpstreamStatus {
    const iso = (time: number | undefined) => (time === undefined ? undefined : new Date(time).toISOString());
    return {
      state: this.state,
      transport: this.link?.kind ?? this.server.transport,
      tools: this.tools.count,
      ...(this.tools.skipped.length > 0 && { skipped_tools: this.tools.skipped }),
      ...this.contextSync.counts,
      calls_in_flight: this.tools.callsInFlight,
      pid: this.link?.pid(),
      connected_since: iso(this.connectedSince),
      failures: this.failures,
      reconnects: this.reconnects,
      last_error: this.lastError,
      next_retry_at: iso(this.nextRetryAt),
    };
  }

  private get connected(): boolean {
    return this.state === 'connected';
  }

  connectedClient(): UpstreamClient | undefined {
    return this.connected ? this.client : undefined;
  }

  private get label(): string {
    return `MCP server "${this.server.name}"`;
  }

  private async attempt(): Promise<void> {
    if (this.stopped) return;
    this.state = this.everConnected || this.failures > 0 ? 'reconnecting' : 'connecting';
    this.nextRetryAt = undefined;
    this.lastStderrLine = undefined;
    try {
      const client = await this.connectClient();
      this.listStale = false;
      await this.listenForChanges(client).catch((error: unknown) => {
        this.context.logger.warn(`${this.label}: its changes will not be followed: ${this.redact(describeUpstreamError(error))}`);
      });
      const tools = await this.tools.list(client);
      await this.contextSync.load(client);
      if (this.stopped) return;
      this.state = 'connected';
      this.connectedSince = Date.now();
      this.failures = 0;
      this.tools.sync(tools);
      this.contextSync.connected(client);
      if (this.listStale) this.tools.queueRefresh(client);
      const count = this.tools.count;
      const how = `${this.link!.kind}, ${count} tool${count === 1 ? '' : 's'}`;
      if (this.everConnected) {
        this.reconnects += 1;
        this.context.logger.log(`${this.label} is back (${how})`);
      } else this.context.logger.log(`${this.label} connected (${how})`);
      this.everConnected = true;
      this.lastError = undefined;
      this.schedulePing(client);
    } catch (error) {
      if (this.stopped) return;
      this.release();
      const stderr = this.server.transport === 'stdio' && this.lastStderrLine ? `; stderr: ${this.lastStderrLine}` : '';
      this.retryLater(`could not connect: ${describeUpstreamError(error)}${stderr}`);
    }
  }

  /**
   * A connected client, over Streamable HTTP then SSE when the entry allows both. A stdio
   * server that closes at the `server/discover` probe (SDKs that end on any request before
   * `initialize` do) is started again and spoken to in 2025 at once.
   */
  private async connectClient(): Promise<UpstreamClient> {
    const { server } = this;
    try {
      return await this.connectOver(server.transport);
    } catch (error) {
      if (this.stopped) throw error;
      if (server.transport === 'stdio' && error instanceof SdkError && error.code === SdkErrorCode.EraNegotiationFailed) {
        this.release();
        this.context.logger.debug(`${this.label} did not take the server/discover probe (${describeUpstreamError(error)}); starting it again for 2025`);
        return this.connectOver('stdio', false);
      }
      if (server.transport !== 'streamable-http' || !server.sseFallback || !refusesStreamableHttp(error)) throw error;
      this.release();
      this.context.logger.debug(`${this.label} refused Streamable HTTP (${describeUpstreamError(error)}); trying SSE`);
      return this.connectOver('sse');
    }
  }

  /** `negotiate`: probe for 2026 first; SSE is a 2025 transport, so never over it. */
  private async connectOver(kind: UpstreamTransport, negotiate = kind !== 'sse'): Promise<UpstreamClient> {
    const client = new UpstreamClient(this.context.clientInfo, this.callers, negotiate);
    const link = openLink(this.server, kind, this.context.maxResultBytes, {
      onStderrLine: (line) => {
        if (line.trim() === '') return;
        this.lastStderrLine = brief(this.redact(line.trim()));
        this.context.logger.debug(`${this.label} stderr: ${this.lastStderrLine}`);
      },
      onDropped: (message) => this.dropped(message),
    });
    this.client = client;
    this.link = link;
    client.onclose = () => this.lost(client, new Error('the connection closed'));
    client.onerror = (error) => {
      this.context.logger.debug(`${this.label}: ${this.redact(describeUpstreamError(error))}`);
      void this.checkAlive(client);
    };
    this.contextSync.listen(client);
    this.relayFromUpstream(client);
    client.setNotificationHandler('notifications/tools/list_changed', () => {
      if (this.connected) this.tools.queueRefresh(client);
      else this.listStale = true;
    });
    await client.connect(link.transport, { timeout: this.server.connectTimeoutMs });
    return client;
  }

  /**
   * What the upstream sends the caller of a call while it runs: log messages (else logged here, at
   * debug level), elicitation and sampling requests (else refused), roots requests (else answered
   * with none), see {@link UpstreamCallers}.
   */
  private relayFromUpstream(client: UpstreamClient): void {
    client.setNotificationHandler('notifications/message', ({ params }) => {
      const caller = this.callers.current();
      if (caller?.log) this.callers.relay(caller, () => caller.log?.(params));
      else this.context.logger.debug(`${this.label} log (${params.level}): ${brief(this.redact(JSON.stringify(params.data) ?? ''))}`);
    });
    // The SDK's client checks each answer against the request's result schema before sending it on.
    // On 2026 it calls these same handlers for the input an upstream's answer asks for (`input_required`),
    // with the key the upstream asked it under as the request's id.
    const keyOf = (ctx: { mcpReq: { id: unknown } }) => (client.modern ? String(ctx.mcpReq.id) : undefined);
    const relay = (request: { method: string; params?: Record<string, unknown> }, ctx: { mcpReq: { id: unknown; signal: AbortSignal } }) =>
      this.callers.request(this.label, request.method, request.params, ctx.mcpReq.signal, keyOf(ctx));
    client.setRequestHandler('elicitation/create', (request, ctx) => relay(request, ctx) as Promise<ElicitResult>);
    client.setRequestHandler('sampling/createMessage', (request, ctx) => relay(request, ctx) as Promise<CreateMessageResult>);
    client.setRequestHandler(
      'roots/list',
      (request, ctx) => this.callers.roots(this.label, request.params, ctx.mcpReq.signal, keyOf(ctx)) as Promise<ListRootsResult>,
    );
  }

  /**
   * On 2026, opens the stream that brings the upstream's `list_changed` notifications; when it
   * ends, it is opened again and every list read again (what changed meanwhile was not told).
   * One that cannot be opened again, or keeps ending at once, means the upstream is gone.
   */
  private async listenForChanges(client: UpstreamClient): Promise<void> {
    const opened = Date.now();
    const stream = await client.listenForChanges({ timeout: this.server.connectTimeoutMs });
    void stream?.closed.then((how) => {
      if (how === 'local' || client !== this.client || !this.connected) return;
      if (how === 'graceful' || Date.now() - opened < CHANGE_STREAM_MIN_LIFE_MS) return this.lost(client, new Error(`its change stream ended (${how})`));
      this.listenForChanges(client).then(
        () => {
          this.tools.queueRefresh(client);
          this.contextSync.refreshAll(client);
        },
        (error: unknown) => this.lost(client, error),
      );
    });
  }

  private dropped(message: DroppedMessage): void {
    const unanswered = message.id === undefined ? '; it answered no call the gateway could tell' : '';
    this.context.logger.warn(`${this.label}: ${describeOversizedAnswer(message)}${unanswered}`);
  }

  private schedulePing(client: UpstreamClient): void {
    if (this.context.pingIntervalMs === 0) return;
    this.pingTimer = setTimeout(() => {
      void this.checkAlive(client).then(() => {
        if (client === this.client && this.connected) this.schedulePing(client);
      });
    }, this.context.pingIntervalMs);
    this.pingTimer.unref();
  }

  /** Pings a connected upstream; no answer in time, or no way to send, means it is gone. */
  async checkAlive(client: UpstreamClient): Promise<void> {
    if (this.checkingAlive || client !== this.client || !this.connected) return;
    this.checkingAlive = true;
    try {
      await client.answers({ timeout: this.server.connectTimeoutMs });
    } catch (error) {
      // An error answer still proves the server is there.
      if (!(error instanceof ProtocolError)) this.lost(client, error);
    } finally {
      this.checkingAlive = false;
    }
  }

  /** The live connection is gone: withdraw its tools, close what is left of it, and retry. */
  lost(client: UpstreamClient, error: unknown): void {
    if (client !== this.client || !this.connected || this.stopped) return;
    const withdrawn = this.tools.withdraw();
    this.contextSync.withdraw();
    // A connection that held for a while starts the backoff afresh; one that keeps dying does not.
    if (Date.now() - this.connectedSince! >= this.context.retryMaxMs) this.backoffStep = 0;
    this.connectedSince = undefined;
    this.release();
    this.retryLater(`went away: ${describeUpstreamError(error)}; ${withdrawn} tool${withdrawn === 1 ? '' : 's'} withdrawn`);
  }

  private retryLater(problem: string): void {
    // A lost connection is not a failed attempt; the backoff counts both.
    if (this.state !== 'connected') this.failures += 1;
    this.backoffStep += 1;
    const delay = retryDelayMs(this.backoffStep, this.context.retryMinMs, this.context.retryMaxMs);
    this.state = 'failed';
    this.lastError = brief(this.redact(problem));
    this.nextRetryAt = Date.now() + delay;
    this.context.logger.warn(`${this.label} ${this.lastError}; next attempt in ${(delay / 1000).toFixed(1)} s`);
    this.retryTimer = setTimeout(() => void this.attempt(), delay);
    this.retryTimer.unref();
  }

  /**
   * Forgets the current client and closes it, and its transport with it, which the client does
   * not hold while it probes for the upstream's revision; a stdio child is ended (stdin closed,
   * then SIGTERM, then SIGKILL).
   */
  private release(): void {
    const client = this.client;
    this.client = undefined;
    clearTimeout(this.pingTimer);
    if (!client) return;
    const closing = Promise.all([client.close(), this.link?.transport.close()]).then(
      () => undefined,
      () => undefined,
    );
    this.closing.add(closing);
    void closing.finally(() => this.closing.delete(closing));
  }
}
