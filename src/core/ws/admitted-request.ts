import { IncomingMessage } from 'http';
import type { Socket } from 'net';

/** What a connection that came by another transport says of itself, in an upgrade's terms. */
export interface AdmittedPeer {
  /** Lower-case header names, as an upgrade's would be: `authorization`, `device-id`, `protocol-version`... */
  headers: Readonly<Record<string, string>>;
  remoteAddress?: string;
  remotePort?: number;
  /** A query string (without `?`) for the request's URL. */
  query?: string;
}

/**
 * An upgrade request made up for a connection that did not come through one (a xiaozhi device over
 * MQTT): `path` (the route's) as its URL, `peer`'s headers, and a socket that knows only the
 * peer's address. Upgrade guards and protocols read it as they read a real one; nothing can be
 * read from its body or its socket.
 */
export function admittedRequest(path: string, peer: AdmittedPeer): IncomingMessage {
  const socket = { remoteAddress: peer.remoteAddress, remotePort: peer.remotePort, readableHighWaterMark: 0 } as unknown as Socket;
  const request = new IncomingMessage(socket);
  request.method = 'GET';
  request.url = peer.query ? `${path}?${peer.query}` : path;
  request.headers = { ...peer.headers };
  request.complete = true;
  return request;
}
