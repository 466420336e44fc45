import { Injectable, Optional } from '@nestjs/common';
import { UriTemplate } from '@modelcontextprotocol/sdk/shared/uriTemplate.js';
import type {
  CompleteRequest,
  CompleteResult,
  GetPromptResult,
  Prompt,
  ReadResourceResult,
  Resource,
  ResourceTemplate,
} from '@modelcontextprotocol/sdk/types.js';
import { Observable, Subject } from 'rxjs';
import { AccessTokenService } from '../auth/access-token.service';
import { FULL_ACCESS, Grant } from '../auth/grant';
import { RateLimitService } from '../limits/rate-limit.service';
import { RateLimitedError } from '../limits/rate-limited.error';
import {
  ContextListKind,
  ContextRequest,
  ContextRequestOptions,
  ContextRequestOutcome,
  ContextRequestWatcher,
  ContextSource,
  UnknownContextError,
} from './context-source';

/**
 * The resources, resource templates and prompts of every source (upstream MCP servers), as one
 * catalogue beside the tools: listed and used per caller, narrowed by its grant (`resources` and
 * `prompts` in the tokens file), each request sent to the source that owns its URI or name.
 *
 * Resource URIs are served as the sources give them, not renamed: they are addresses that tool
 * results (resource links, embedded resources), prompts and other resources refer to, and
 * renaming them would break those references. When two sources list one URI, the source ranked
 * first (earlier in `MCP_SERVERS_FILE`) owns it. Prompt names carry their source's prefix, as
 * tool names do.
 */
@Injectable()
export class ContextCatalogueService {
  private readonly sources = new Map<string, ContextSource>();
  /** The sources by rank, made again when one is set or removed. */
  private ranked: ContextSource[] = [];
  private readonly templates = new WeakMap<ResourceTemplate, UriTemplate | null>();
  private readonly changeStream = new Subject<ContextListKind>();

  /** Each change of a list, to be announced to clients as `notifications/<kind>/list_changed`. */
  readonly changes: Observable<ContextListKind> = this.changeStream.asObservable();

  private readonly watchers: ContextRequestWatcher[] = [];

  constructor(
    @Optional() private readonly tokens?: AccessTokenService,
    /** Counts reads, prompts and completions against the caller's `tool_calls_per_minute`, as tool calls are. */
    @Optional() private readonly rateLimits?: RateLimitService,
  ) {}

  /** Adds a watcher of every request from now on (the audit log's lines). */
  watch(watcher: ContextRequestWatcher): void {
    this.watchers.push(watcher);
  }

  /** Adds a source, or replaces what it offered; announces the lists that changed. */
  set(source: ContextSource): void {
    const before = this.sources.get(source.id);
    this.sources.set(source.id, source);
    this.rank();
    this.announce(before, source);
  }

  /** The source went away: what it offered leaves the catalogue. */
  remove(id: string): void {
    const source = this.sources.get(id);
    if (!source) return;
    this.sources.delete(id);
    this.rank();
    this.announce(source, undefined);
  }

  /** Announces each list whose entries a source replaced, unless it offered none of them before or after. */
  private announce(before: ContextSource | undefined, after: ContextSource | undefined): void {
    const lists = { resources: (s?: ContextSource) => [s?.resources, s?.resourceTemplates], prompts: (s?: ContextSource) => [s?.prompts] };
    for (const [kind, of] of Object.entries(lists) as [ContextListKind, (s?: ContextSource) => (readonly unknown[] | undefined)[]][]) {
      const [old, now] = [of(before), of(after)];
      const replaced = old.some((list, index) => list !== now[index]);
      const offered = [...old, ...now].some((list) => (list?.length ?? 0) > 0);
      if (replaced && offered) this.changeStream.next(kind);
    }
  }

  listResources(principal: string | undefined): Resource[] {
    return this.readable(
      principal,
      (source) => source.resources,
      (resource) => resource.uri,
    );
  }

  listResourceTemplates(principal: string | undefined): ResourceTemplate[] {
    return this.readable(
      principal,
      (source) => source.resourceTemplates,
      (template) => template.uriTemplate,
    );
  }

  /** The entries the caller may read, each address once: the source ranked first keeps it. */
  private readable<T>(principal: string | undefined, entriesOf: (source: ContextSource) => readonly T[], addressOf: (entry: T) => string): T[] {
    const grant = this.grantOf(principal);
    const seen = new Set<string>();
    const kept: T[] = [];
    for (const source of this.ranked) {
      for (const entry of entriesOf(source)) {
        const address = addressOf(entry);
        if (seen.has(address) || !grant.mayReadResource(address)) continue;
        seen.add(address);
        kept.push(entry);
      }
    }
    return kept;
  }

  listPrompts(principal: string | undefined): Prompt[] {
    const grant = this.grantOf(principal);
    return this.ranked.flatMap((source) => source.prompts.filter((prompt) => grant.mayUsePrompt(prompt.name)));
  }

  /**
   * Reads `uri` from the source that lists it, else from the first whose template matches it.
   * Throws {@link UnknownContextError} when none does or the caller may not read it.
   */
  readResource(principal: string | undefined, uri: string, options: ContextRequestOptions): Promise<ReadResourceResult> {
    return this.admitted({ kind: 'resource', target: uri, principal }, () => this.resourceOwner(principal, uri).readResource(uri, options));
  }

  /** Calls `listener` at each update of `uri` (at the source that owns it, as for a read) until the returned function is called. */
  subscribe(principal: string | undefined, uri: string, listener: () => void): Promise<() => void> {
    return this.resourceOwner(principal, uri).subscribe(uri, listener);
  }

  private resourceOwner(principal: string | undefined, uri: string): ContextSource {
    const owner = this.grantOf(principal).mayReadResource(uri)
      ? (this.ranked.find((source) => source.resources.some((resource) => resource.uri === uri)) ??
        this.ranked.find((source) => source.resourceTemplates.some((template) => this.matches(template, uri))))
      : undefined;
    if (!owner) throw new UnknownContextError('resource', uri);
    return owner;
  }

  getPrompt(principal: string | undefined, name: string, args: Record<string, string> | undefined, options: ContextRequestOptions): Promise<GetPromptResult> {
    return this.admitted({ kind: 'prompt', target: name, principal }, () => this.promptOwner(principal, name).getPrompt(name, args, options));
  }

  /** Completion of a prompt's or a resource template's argument, by the source that offers it. */
  complete(principal: string | undefined, params: CompleteRequest['params'], options: ContextRequestOptions): Promise<CompleteResult> {
    const { ref } = params;
    const target = ref.type === 'ref/prompt' ? ref.name : ref.uri;
    return this.admitted({ kind: 'completion', target, principal }, () => {
      if (ref.type === 'ref/prompt') return this.promptOwner(principal, ref.name).complete(params, options);
      const owner = this.grantOf(principal).mayReadResource(ref.uri)
        ? this.ranked.find((source) => source.resourceTemplates.some((template) => template.uriTemplate === ref.uri))
        : undefined;
      if (!owner) throw new UnknownContextError('resource template', ref.uri);
      return owner.complete(params, options);
    });
  }

  /** Runs one request within the caller's rate limit, inside its watchers (a trace span), and tells them how it ended. */
  private async admitted<T>(request: ContextRequest, run: () => Promise<T>): Promise<T> {
    const started = performance.now();
    const watches = this.watchers.map((watcher) => watcher.contextRequestStarted(request));
    const ended = (outcome: ContextRequestOutcome) => {
      for (const watch of watches) watch.ended(outcome, performance.now() - started);
    };
    const inside = watches.reduce<() => Promise<T>>(
      (inner, watch) => (watch.within ? () => watch.within!(inner) : inner),
      async () => {
        await this.rateLimits?.admitToolCall(request.principal);
        return run();
      },
    );
    try {
      const result = await inside();
      ended('ok');
      return result;
    } catch (error) {
      ended(error instanceof UnknownContextError ? 'not_found' : error instanceof RateLimitedError ? 'rate_limited' : 'failed');
      throw error;
    }
  }

  private promptOwner(principal: string | undefined, name: string): ContextSource {
    const owner = this.grantOf(principal).mayUsePrompt(name) ? this.ranked.find((source) => source.prompts.some((prompt) => prompt.name === name)) : undefined;
    if (!owner) throw new UnknownContextError('prompt', name);
    return owner;
  }

  private matches(template: ResourceTemplate, uri: string): boolean {
    let parsed = this.templates.get(template);
    if (parsed === undefined) {
      try {
        parsed = new UriTemplate(template.uriTemplate);
      } catch {
        parsed = null; // a template the SDK cannot parse matches nothing; it is still listed as the source gave it
      }
      this.templates.set(template, parsed);
    }
    return parsed?.match(uri) != null;
  }

  private rank(): void {
    this.ranked = [...this.sources.values()].sort((a, b) => a.rank - b.rank);
  }

  private grantOf(principal: string | undefined): Grant {
    return this.tokens?.grantOf(principal) ?? FULL_ACCESS;
  }
}
