import { Injectable } from '@nestjs/common';
import type { WebSocket } from 'ws';
import type { LlmConnection } from './llm-connection';

/** The open LLM-gateway connections, by socket: shared by the gateway and its interceptors. */
@Injectable()
export class LlmConnectionRegistry {
  private readonly bySocket = new Map<WebSocket, LlmConnection>();

  add(connection: LlmConnection): void {
    this.bySocket.set(connection.socket, connection);
  }

  remove(socket: WebSocket): LlmConnection | undefined {
    const connection = this.bySocket.get(socket);
    this.bySocket.delete(socket);
    return connection;
  }

  of(socket: WebSocket): LlmConnection | undefined {
    return this.bySocket.get(socket);
  }

  all(): LlmConnection[] {
    return [...this.bySocket.values()];
  }

  get size(): number {
    return this.bySocket.size;
  }
}
