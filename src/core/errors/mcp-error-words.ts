/**
 * An MCP error's words without the `MCP error <code>: ` that an SDK 1.x `McpError` puts before
 * them (and an SDK 1.x server sends on the wire), to build another error of them: the gateway
 * speaks both SDKs, and a message carried across would otherwise say its code twice.
 */
export function withoutMcpErrorPrefix(message: string): string {
  return message.replace(/^MCP error -?\d+: /, '');
}
