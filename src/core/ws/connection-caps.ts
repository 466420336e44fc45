import type { ConnectionCapsConfig } from '../../config/gateway-config';
import { ANONYMOUS_PRINCIPAL } from '../auth/access-token.service';
import type { ConnectionRegistry } from './connection-registry';

/** A named token's own connection quota. */
export interface TokenQuota {
  name: string;
  maxConnections: number;
}

/** Why a connection is refused: the HTTP status of a refused upgrade, and the words. */
export interface CapRefusal {
  status: 429 | 503;
  message: string;
}

/**
 * The caps every WebSocket route shares, whatever its protocol: connections in total, per remote
 * address and per token (`WS_MAX_CONNECTIONS_PER_PRINCIPAL`, or a named token's own
 * `max_connections`), and sockets still to authenticate by message. A protocol's own cap
 * (`CLOUD_MAX_CONNECTIONS`, `MCP_WS_MAX_CONNECTIONS`) is its route's guard; neither counts a
 * socket before it has authenticated, so clients without a token cannot keep real ones out:
 * those wait under {@link ConnectionCapsConfig.unauthenticated} and a deadline instead.
 */
export class ConnectionCaps {
  constructor(
    private readonly config: ConnectionCapsConfig,
    private readonly registry: ConnectionRegistry,
    /** A named token's own `max_connections` (the tokens file), which replaces the per-token cap for it. */
    private readonly quotaOf: (principal: string) => TokenQuota | undefined = () => undefined,
  ) {}

  /** At the upgrade, before any socket exists; `principal` is undefined when it comes by message. */
  atUpgrade(remoteAddress: string | undefined, principal: string | undefined): CapRefusal | undefined {
    const { total, perAddress, unauthenticated } = this.config;
    if (this.registry.size >= total) return { status: 503, message: `Too many connections: the gateway holds ${total} (WS_MAX_CONNECTIONS)` };
    if (perAddress > 0 && remoteAddress !== undefined && this.registry.countAddress(remoteAddress) >= perAddress) {
      return { status: 429, message: `Too many connections from ${remoteAddress}: at most ${perAddress} (WS_MAX_CONNECTIONS_PER_ADDRESS)` };
    }
    if (principal === undefined) {
      return this.registry.unauthenticatedCount >= unauthenticated
        ? { status: 503, message: `Too many connections waiting to authenticate: at most ${unauthenticated} (WS_MAX_UNAUTHENTICATED)` }
        : undefined;
    }
    return this.forPrincipal(principal);
  }

  /** When `principal` authenticates a socket that is already open (by an auth frame). */
  forPrincipal(principal: string): CapRefusal | undefined {
    if (principal === ANONYMOUS_PRINCIPAL) return undefined;
    const quota = this.quotaOf(principal);
    const limit = quota?.maxConnections ?? this.config.perPrincipal;
    if (limit === 0 || this.registry.countPrincipal(principal) < limit) return undefined;
    const message = quota
      ? `Too many connections for token "${quota.name}": at most ${limit} at once (max_connections)`
      : `Too many connections for this token: at most ${limit} (WS_MAX_CONNECTIONS_PER_PRINCIPAL)`;
    return { status: 429, message };
  }
}
