/** DI token of the validated upstream servers of `MCP_SERVERS_FILE` (none when unset or MCP is off). */
export const UPSTREAM_SERVERS = Symbol('UPSTREAM_SERVERS');
