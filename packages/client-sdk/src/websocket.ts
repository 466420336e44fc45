/**
 * The part of the WebSocket API the client uses. Browsers' WebSocket and the `ws` package's
 * both have it. Event handlers take `never` so that either implementation's typed handlers fit.
 */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: ((event: never) => void) | null;
  onmessage: ((event: never) => void) | null;
  onclose: ((event: never) => void) | null;
  onerror: ((event: never) => void) | null;
}

/**
 * A WebSocket class: the browser's, or `ws`'s (whose third argument carries headers). Browsers'
 * ignore a third argument, which is why the token goes in the query there.
 */
export type WebSocketConstructor = new (url: string, protocols?: string | string[], options?: { headers?: Record<string, string> }) => WebSocketLike;

/** `readyState` values, the same in every implementation. */
export const CONNECTING = 0;
export const OPEN = 1;

export interface ResolvedWebSocket {
  WebSocket: WebSocketConstructor;
  /** Whether it can send an `Authorization` header (only `ws` can). */
  sendsHeaders: boolean;
}

/**
 * The WebSocket class to use: the one given, else the global one (browsers, Node 22+), else
 * `ws`, loaded only then, so browsers never see the import. The specifier is a variable so that
 * bundlers leave it alone too.
 */
export async function resolveWebSocket(given: WebSocketConstructor | undefined): Promise<ResolvedWebSocket> {
  if (given) return { WebSocket: given, sendsHeaders: false };
  const global = (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  if (global) return { WebSocket: global, sendsHeaders: false };
  const specifier = 'ws';
  try {
    const module = (await import(specifier)) as { WebSocket?: WebSocketConstructor; default?: WebSocketConstructor };
    const WebSocket = module.WebSocket ?? module.default;
    if (WebSocket) return { WebSocket, sendsHeaders: true };
  } catch {
    // reported below
  }
  throw new Error('No WebSocket implementation: this runtime has no global WebSocket (Node 20); install the "ws" package or pass options.WebSocket');
}

/** Text of a message event's data: browsers and `ws` give a string for text frames; decode anything else. */
export function messageText(data: unknown): string {
  if (typeof data === 'string') return data;
  if (data instanceof ArrayBuffer || ArrayBuffer.isView(data)) return new TextDecoder().decode(data as ArrayBuffer);
  return String(data);
}
