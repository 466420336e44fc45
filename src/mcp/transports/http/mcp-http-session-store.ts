import type { InitializeRequest } from '@modelcontextprotocol/sdk/types.js';

/** DI token of the {@link McpHttpSessionStore} in use. */
export const MCP_HTTP_SESSION_STORE = Symbol('MCP_HTTP_SESSION_STORE');

/**
 * What another instance needs to take a Streamable HTTP session over: who owns it and what the
 * client said in its `initialize` (the SDK server answers by the client's capabilities).
 */
export interface McpHttpSessionRecord {
  sessionId: string;
  principal: string;
  initialize: Pick<InitializeRequest['params'], 'protocolVersion' | 'capabilities' | 'clientInfo'>;
  /** Unix milliseconds. */
  createdAt: number;
  /** Unix milliseconds; later than `createdAt` once the session was used after its `initialize`. */
  lastUsedAt: number;
}

/**
 * Where MCP Streamable HTTP sessions are known beyond the instance serving them, and counted per
 * principal. In memory ({@link LocalMcpHttpSessionStore}) nothing is shared: each instance knows
 * its own sessions only, as before Redis. With `REDIS_URL` (`RedisMcpHttpSessionStore`) a record
 * lets any instance rebuild the session, and a principal's sessions are counted across instances.
 */
export interface McpHttpSessionStore {
  /** Whether other instances see the records (an instance may then be asked for a session it never held). */
  readonly shared: boolean;
  /**
   * Records a new session unless its principal already holds `perPrincipalLimit` (0: no limit);
   * `false` then. Rejects when the store cannot be reached.
   */
  add(record: McpHttpSessionRecord, perPrincipalLimit: number): Promise<boolean>;
  /** The record of a live session of `principal`, marked used; `undefined` for any other id. */
  claim(sessionId: string, principal: string): Promise<McpHttpSessionRecord | undefined>;
  /** Marks the session used; `false` when it has ended (DELETE on any instance, or expired). */
  touch(sessionId: string, principal: string): Promise<boolean>;
  /** The session ended for good (DELETE, or an `initialize` the SDK refused): every instance forgets it. */
  remove(sessionId: string, principal: string): Promise<void>;
  /** This instance dropped its copy (idle, shutdown); a shared record stays for other instances, and expires by itself. */
  released(sessionId: string, principal: string): void;
}

/**
 * One instance on its own: a session lives exactly as long as this instance's copy, and a
 * principal's sessions are this instance's.
 */
export class LocalMcpHttpSessionStore implements McpHttpSessionStore {
  readonly shared = false;
  private readonly byPrincipal = new Map<string, Set<string>>();

  async add({ sessionId, principal }: McpHttpSessionRecord, perPrincipalLimit: number): Promise<boolean> {
    const held = this.byPrincipal.get(principal) ?? new Set<string>();
    if (perPrincipalLimit > 0 && held.size >= perPrincipalLimit) return false;
    this.byPrincipal.set(principal, held.add(sessionId));
    return true;
  }

  async claim(): Promise<undefined> {
    return undefined;
  }

  async touch(): Promise<boolean> {
    return true;
  }

  async remove(sessionId: string, principal: string): Promise<void> {
    this.released(sessionId, principal);
  }

  released(sessionId: string, principal: string): void {
    const held = this.byPrincipal.get(principal);
    held?.delete(sessionId);
    if (held?.size === 0) this.byPrincipal.delete(principal);
  }
}
