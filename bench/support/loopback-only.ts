import { Server } from 'net';

/**
 * Preloaded into the peer (supergateway), which listens on every interface and has no option to
 * say otherwise: a `listen(port)` without a host is made `listen(port, "127.0.0.1")`, so nothing
 * the bench starts is reachable from outside the machine.
 */
const listen = Server.prototype.listen;
Server.prototype.listen = function (this: Server, ...args: unknown[]) {
  if (typeof args[0] === 'number' && typeof args[1] !== 'string') args.splice(1, 0, '127.0.0.1');
  return (listen as (...a: unknown[]) => Server).apply(this, args);
} as typeof Server.prototype.listen;
