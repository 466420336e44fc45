import type {
  CompleteRequest,
  CompleteResult,
  GetPromptResult,
  Prompt,
  ReadResourceResult,
  Resource,
  ResourceTemplate,
} from '@modelcontextprotocol/sdk/types.js';
import type { ToolCaller } from '../tools/tool-definition';

/** What a caller's request may be stopped by: its cancellation, or the call's own time limit. */
export interface ContextRequestOptions {
  signal: AbortSignal;
  /** The client that made the request, for what the source asks of it while answering (an upstream's elicitation). */
  caller?: ToolCaller;
}

/**
 * What one source (an upstream MCP server) offers besides tools: MCP's context, that is its
 * resources, resource templates and prompts, as it listed them last, and how to use them. Prompt
 * names are already the names the gateway serves (the source's prefix before them); resource URIs
 * and templates are the source's own.
 */
export interface ContextSource {
  /** `mcp:<server>`, as the source of its tools. */
  readonly id: string;
  /** How errors name it: `MCP server "files"`. */
  readonly label: string;
  /** Where it stands among sources: the first source listing a URI owns it. */
  readonly rank: number;
  readonly resources: readonly Resource[];
  readonly resourceTemplates: readonly ResourceTemplate[];
  readonly prompts: readonly Prompt[];
  readResource(uri: string, options: ContextRequestOptions): Promise<ReadResourceResult>;
  /** `name` as the gateway serves it. */
  getPrompt(name: string, args: Record<string, string> | undefined, options: ContextRequestOptions): Promise<GetPromptResult>;
  /** `params.ref` names a prompt as the gateway serves it, or a resource template of this source. */
  complete(params: CompleteRequest['params'], options: ContextRequestOptions): Promise<CompleteResult>;
  /** Calls `listener` at each update of `uri` until the returned function is called. */
  subscribe(uri: string, listener: () => void): Promise<() => void>;
}

/** One request for what a source offers: a resource read, a prompt, a completion. */
export interface ContextRequest {
  kind: 'resource' | 'prompt' | 'completion';
  /** The URI, the prompt's name, or what the completion is for (a prompt's name, a template). */
  target: string;
  principal?: string;
}

/** How a context request ended. */
export type ContextRequestOutcome = 'ok' | 'not_found' | 'rate_limited' | 'failed';

/** One request, watched: `within` runs it (a trace span's context, so what it sends upstream is the span's child), `ended` says how it ended. */
export interface ContextRequestWatch {
  within?<T>(run: () => T): T;
  ended(outcome: ContextRequestOutcome, durationMs: number): void;
}

/** Sees each context request start and end: the audit log, the metrics, the traces. */
export interface ContextRequestWatcher {
  contextRequestStarted(request: ContextRequest): ContextRequestWatch;
}

/** Which of the context's lists changed. */
export type ContextListKind = 'resources' | 'prompts';

/** A resource URI, prompt or template no source offers to the caller. */
export class UnknownContextError extends Error {
  constructor(
    readonly kind: 'resource' | 'prompt' | 'resource template',
    readonly key: string,
  ) {
    super(`Unknown ${kind} "${key}"`);
    this.name = 'UnknownContextError';
  }
}
