import { Injectable } from '@nestjs/common';
import type { GatewayConnection } from './connection';

function increment(counts: Map<string, number>, key: string, by: 1 | -1): void {
  const next = (counts.get(key) ?? 0) + by;
  if (next > 0) counts.set(key, next);
  else counts.delete(key);
}

/**
 * Every open WebSocket connection of the gateway: by protocol (what `/health` reports and what a
 * drain or a shutdown walks), and counted by remote address, by principal and by whether it has
 * authenticated (what the connection caps read). The adapter adds a connection once its
 * upgrade is accepted, tells it when an auth frame settles its principal, and removes it when
 * its socket closes.
 */
@Injectable()
export class ConnectionRegistry {
  private readonly byProtocol = new Map<string, Set<GatewayConnection>>();
  private readonly byId = new Map<string, GatewayConnection>();
  private readonly authenticatedByProtocol = new Map<string, number>();
  private readonly byAddress = new Map<string, number>();
  private readonly byPrincipal = new Map<string, number>();
  private total = 0;
  private unauthenticated = 0;

  add(connection: GatewayConnection): void {
    let connections = this.byProtocol.get(connection.protocol);
    if (!connections) this.byProtocol.set(connection.protocol, (connections = new Set()));
    connections.add(connection);
    this.byId.set(connection.id, connection);
    this.total += 1;
    if (connection.remoteAddress !== undefined) increment(this.byAddress, connection.remoteAddress, 1);
    this.countPrincipalOf(connection, 1);
  }

  /** `connection`, counted so far as waiting to authenticate, now has its principal. */
  authenticated(connection: GatewayConnection, principal: string): void {
    if (!this.byProtocol.get(connection.protocol)?.has(connection)) return;
    this.countPrincipalOf(connection, -1);
    connection.principal = principal;
    this.countPrincipalOf(connection, 1);
  }

  delete(connection: GatewayConnection): void {
    if (!this.byProtocol.get(connection.protocol)?.delete(connection)) return;
    this.byId.delete(connection.id);
    this.total -= 1;
    if (connection.remoteAddress !== undefined) increment(this.byAddress, connection.remoteAddress, -1);
    this.countPrincipalOf(connection, -1);
  }

  /** Open connections of every protocol. */
  get size(): number {
    return this.total;
  }

  /** Open connections still to authenticate by message. */
  get unauthenticatedCount(): number {
    return this.unauthenticated;
  }

  /** How many connections of `protocol` are open and authenticated (those waiting for their auth frame are not counted). */
  count(protocol: string): number {
    return this.authenticatedByProtocol.get(protocol) ?? 0;
  }

  countAddress(address: string): number {
    return this.byAddress.get(address) ?? 0;
  }

  countPrincipal(principal: string): number {
    return this.byPrincipal.get(principal) ?? 0;
  }

  /** The open connection `id`, if it is one. */
  get(id: string): GatewayConnection | undefined {
    return this.byId.get(id);
  }

  /** The open connections of `protocol`, or of every protocol. */
  list<State = unknown>(protocol?: string): GatewayConnection<State>[] {
    const sets = protocol === undefined ? [...this.byProtocol.values()] : [this.byProtocol.get(protocol) ?? new Set()];
    return sets.flatMap((connections) => [...connections]) as GatewayConnection<State>[];
  }

  private countPrincipalOf(connection: GatewayConnection, by: 1 | -1): void {
    if (connection.principal === undefined) {
      this.unauthenticated += by;
      return;
    }
    increment(this.byPrincipal, connection.principal, by);
    increment(this.authenticatedByProtocol, connection.protocol, by);
  }
}
