import { SetMetadata } from '@nestjs/common';
import type { ToolSpec } from './tool-definition';

export const TOOL_METADATA = Symbol('gateway:tool');

/** What `@Tool()` takes: a {@link ToolSpec} without the handler (the method) and the source. */
export type ToolOptions = Omit<ToolSpec, 'handler' | 'source'>;

/** Metadata stored on the method; `source` is set only by the gateway's own built-in tools. */
export interface ToolMetadata extends ToolOptions {
  source?: 'builtin';
}

/**
 * Declares a provider method as a tool. Any provider of any module imported next to
 * `GatewayModule` is scanned at bootstrap, so users add tools by writing their own Nest module.
 * The method receives the validated arguments object and a {@link ToolCallContext}; it returns
 * any JSON value (or a promise of one) and throws {@link ToolError} for a failure the caller
 * should read. An `async *` method streams: it yields partial results and returns the final one
 * (see `ToolHandler`).
 *
 * @example
 * ```ts
 * @Injectable()
 * export class GreetingTools {
 *   @Tool({ name: 'greet', description: 'Greets someone',
 *           inputSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } })
 *   greet({ name }: { name: string }) { return `Hello, ${name}!`; }
 * }
 * ```
 */
export const Tool = (options: ToolOptions): MethodDecorator => SetMetadata(TOOL_METADATA, options);

/** `@Tool()` for the tools the gateway ships itself (source `builtin`). */
export const BuiltinTool = (options: ToolOptions): MethodDecorator => SetMetadata(TOOL_METADATA, { ...options, source: 'builtin' } satisfies ToolMetadata);
