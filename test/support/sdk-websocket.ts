import { WebSocket } from 'ws';

/**
 * The SDK's `WebSocketClientTransport` uses the global `WebSocket`, which Node has from 22 on (20
 * only behind `--experimental-websocket`). On Node 20 the tests lend it `ws`'s, which implements
 * the same browser API; the SDK's own code runs unchanged.
 */
export function provideGlobalWebSocket(): void {
  (globalThis as { WebSocket?: unknown }).WebSocket ??= WebSocket;
}
