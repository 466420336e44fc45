import { Injectable } from '@nestjs/common';
import type { GatewayConnection } from './connection';

/**
 * Every open WebSocket connection of the gateway, by protocol: what connection limits count,
 * what `/health` reports and what a drain or a shutdown walks. The adapter adds a connection
 * once its upgrade is accepted and removes it when its socket closes.
 */
@Injectable()
export class ConnectionRegistry {
  private readonly byProtocol = new Map<string, Set<GatewayConnection>>();

  add(connection: GatewayConnection): void {
    let connections = this.byProtocol.get(connection.protocol);
    if (!connections) this.byProtocol.set(connection.protocol, (connections = new Set()));
    connections.add(connection);
  }

  delete(connection: GatewayConnection): void {
    this.byProtocol.get(connection.protocol)?.delete(connection);
  }

  /** How many connections of `protocol` are open. */
  count(protocol: string): number {
    return this.byProtocol.get(protocol)?.size ?? 0;
  }

  /** The open connections of `protocol`, or of every protocol. */
  list<State = unknown>(protocol?: string): GatewayConnection<State>[] {
    const sets = protocol === undefined ? [...this.byProtocol.values()] : [this.byProtocol.get(protocol) ?? new Set()];
    return sets.flatMap((connections) => [...connections]) as GatewayConnection<State>[];
  }
}
