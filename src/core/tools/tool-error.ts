/**
 * Throw this from a tool handler to fail the call with a message the caller should read
 * (for example "Division by zero"). Any other exception is logged and reported to the caller
 * only as an internal failure, so stack traces and secrets never leave the gateway.
 */
export class ToolError extends Error {
  constructor(
    message: string,
    /** Optional machine-readable detail, passed to callers as-is. */
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'ToolError';
  }
}
