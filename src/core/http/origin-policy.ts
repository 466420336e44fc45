import { Inject, Injectable } from '@nestjs/common';
import type { IncomingHttpHeaders, IncomingMessage } from 'http';
import { AddressInfo, Server } from 'net';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';
import { isLoopbackHost } from '../../shared/loopback';

/** A host name without its port and IPv6 brackets, lower case; `undefined` when unreadable. */
function hostnameOf(host: string): string | undefined {
  try {
    return new URL(`http://${host}`).hostname.replace(/^\[|\]$/g, '').toLowerCase();
  } catch {
    return undefined;
  }
}

/**
 * The address the listener that accepted `request` is bound to (`0.0.0.0`, `127.0.0.1`...):
 * whether the request came through a loopback-only listener. Node sets `server` on the sockets
 * a server accepts.
 */
export function boundAddressOf(request: IncomingMessage): string | undefined {
  const server = (request.socket as { server?: Server }).server;
  const address = server?.address();
  return address !== null && typeof address === 'object' ? (address as AddressInfo).address : undefined;
}

/**
 * Which browser pages may reach the gateway, and under which host names: the defence against
 * cross-site WebSocket hijacking and DNS rebinding (the MCP transport spec asks servers to check
 * `Origin`, and `Host` when bound to loopback). A request without `Origin` is not a browser's
 * cross-site request and passes (devices, agents, curl). A browser's passes when its origin is
 * the gateway's own (same host), in `ALLOWED_ORIGINS`, or a localhost page while the gateway
 * listens on loopback. On loopback the `Host` header must also name this machine (or one of
 * `ALLOWED_HOSTS`): a page whose DNS name was rebound to 127.0.0.1 still says its own name there.
 */
@Injectable()
export class OriginPolicy {
  private readonly anyOrigin: boolean;
  private readonly origins: Set<string>;
  private readonly hosts: Set<string>;

  constructor(@Inject(GATEWAY_CONFIG) config: GatewayConfig) {
    this.anyOrigin = config.auth.allowedOrigins.includes('*');
    this.origins = new Set(config.auth.allowedOrigins);
    this.hosts = new Set(config.auth.allowedHosts);
  }

  /**
   * Why a request that reached a listener bound to `boundAddress` is refused, or `undefined`
   * when it may proceed.
   */
  refusal(headers: IncomingHttpHeaders, boundAddress: string | undefined): string | undefined {
    const loopback = boundAddress !== undefined && isLoopbackHost(boundAddress);
    const host = headers.host;
    const hostname = host === undefined ? undefined : hostnameOf(host);
    if (loopback && (hostname === undefined || !(isLoopbackHost(hostname) || this.hosts.has(hostname)))) {
      return `Host "${clip(host ?? '')}" is not allowed: the gateway listens on loopback (add the name to ALLOWED_HOSTS)`;
    }
    const origin = headers.origin;
    if (origin === undefined || this.allowsOrigin(origin, host, loopback)) return undefined;
    return `Origin "${clip(origin)}" is not allowed (add it to ALLOWED_ORIGINS)`;
  }

  /** Whether `origin` is another site's page that may use the gateway (CORS answers name it). */
  isCrossOriginAllowed(origin: string, host: string | undefined, boundAddress: string | undefined): boolean {
    const loopback = boundAddress !== undefined && isLoopbackHost(boundAddress);
    return !this.isSameOrigin(origin, host) && this.allowsOrigin(origin, host, loopback);
  }

  private allowsOrigin(origin: string, host: string | undefined, loopback: boolean): boolean {
    if (this.anyOrigin) return true;
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      return false; // "null" (sandboxed frames, file: pages) and anything unreadable
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
    if (this.origins.has(url.origin)) return true;
    if (loopback && isLoopbackHost(url.hostname)) return true;
    return this.isSameOrigin(origin, host);
  }

  private isSameOrigin(origin: string, host: string | undefined): boolean {
    if (host === undefined) return false;
    try {
      return new URL(origin).host === new URL(`http://${host}`).host;
    } catch {
      return false;
    }
  }
}

/** A header value as it may appear in an answer or a log line: bounded. */
function clip(value: string): string {
  return value.length > 100 ? `${value.slice(0, 100)}...` : value;
}
