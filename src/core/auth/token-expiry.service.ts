import { Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import type { IncomingMessage } from 'http';
import { CLOSE_POLICY_VIOLATION } from '../ws/connection';
import { ConnectionRegistry } from '../ws/connection-registry';

/** How often connections are checked for a token past its expiry. */
const SWEEP_INTERVAL_MS = 1000;

/** The close reason of a WebSocket connection whose JWT access token expired. */
export const TOKEN_EXPIRED_REASON = 'Access token expired: connect again with a new token';

/**
 * Closes a WebSocket connection when the JWT it authenticated with expires: code 1008 (policy
 * violation) and {@link TOKEN_EXPIRED_REASON}, so the client knows to fetch a new token and
 * connect again. Static tokens do not expire. Connections are found by their upgrade request,
 * noted at authentication (the upgrade, or an auth frame); checked once a second.
 */
@Injectable()
export class TokenExpiryService implements OnModuleInit, OnModuleDestroy {
  private readonly expiring = new Map<IncomingMessage, number>();
  private timer?: NodeJS.Timeout;

  constructor(private readonly registry: ConnectionRegistry) {}

  onModuleInit(): void {
    this.timer = setInterval(() => this.sweep(), SWEEP_INTERVAL_MS);
    this.timer.unref();
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
  }

  /** The connection of `request` is to close at `expiresAt` (ms since the epoch). */
  note(request: IncomingMessage, expiresAt: number): void {
    if (!this.expiring.has(request)) request.socket?.once('close', () => this.expiring.delete(request));
    this.expiring.set(request, expiresAt);
  }

  /** Closes the connections whose token has expired; returns how many. */
  sweep(now = Date.now()): number {
    const expired = new Set<IncomingMessage>();
    for (const [request, expiresAt] of this.expiring) if (expiresAt <= now) expired.add(request);
    if (expired.size === 0) return 0;
    for (const request of expired) this.expiring.delete(request);
    let closed = 0;
    for (const connection of this.registry.list()) {
      if (!expired.has(connection.request)) continue;
      connection.close(CLOSE_POLICY_VIOLATION, TOKEN_EXPIRED_REASON);
      closed++;
    }
    return closed;
  }
}
