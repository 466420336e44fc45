/** `readyState` values, as `ws` and the browser's WebSocket number them. */
export const SOCKET_CONNECTING = 0;
export const SOCKET_OPEN = 1;
export const SOCKET_CLOSING = 2;
export const SOCKET_CLOSED = 3;

/**
 * What a {@link GatewayConnection} needs of its transport: `ws`'s `WebSocket` is one as it is; a
 * protocol served over another transport (a xiaozhi device over MQTT + UDP) gives one of its own,
 * and the connection, its caps, its queue and its protocol's handlers work the same.
 *
 * It emits `message` `(data: Buffer, isBinary: boolean)` for each message received, `close`
 * `(code: number, reason: Buffer)` once when it has closed, `pong` for each sign of life a
 * {@link ping} asked for (a transport that keeps its peer alive itself never emits it), and
 * `error` for a protocol fault of the peer (it closes by itself after).
 */
export interface ConnectionSocket {
  /** {@link SOCKET_OPEN} while messages can be sent, then {@link SOCKET_CLOSING} and {@link SOCKET_CLOSED}. */
  readonly readyState: number;
  /** The subprotocol agreed at the start (`''` for none). */
  readonly protocol: string;
  /** Bytes accepted by {@link send} and not yet written to the network. */
  readonly bufferedAmount: number;
  /** Whether reading was paused ({@link pause}). */
  readonly isPaused: boolean;
  /** Sends one message: text unless `options.binary`. */
  send(data: string | Uint8Array, options?: { binary?: boolean }): void;
  /** Begins an orderly close, with the code and reason the peer is told where the transport can. */
  close(code?: number, reason?: string): void;
  /** Drops the transport at once. */
  terminate(): void;
  ping(): void;
  /** Stops reading the peer's messages until {@link resume}. */
  pause(): void;
  resume(): void;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- `ws`'s listeners are typed per event; any of them fits.
  on(event: 'close' | 'message' | 'pong' | 'error', listener: (...args: any[]) => void): unknown;
}
