import { Injectable, Optional } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import type { GatewayConfig } from '../../config/gateway-config';
import { protocolRouteOf, type ProtocolRouteOptions } from '../ws/protocol-gateway.decorator';

/** Where the gateway listens, for a protocol's line of the startup summary. */
export interface ProtocolSummaryContext {
  /** `http://<host>:<port>` of the main listener, its host as a person can open it. */
  http: string;
  /** `ws://<host>:<port>`, the same. */
  ws: string;
  config: GatewayConfig;
}

/** What a protocol tells the core about itself (see {@link ProtocolRegistry}). */
export interface ProtocolDeclaration {
  /**
   * Its name: the `protocol` of its `@ProtocolGateway` routes, of its connections and of the
   * `protocol` metric label, and what a token's `protocols` (tokens file) may name.
   */
  name: string;
  /** What the startup summary calls it (`LLM gateway`); its name when omitted. */
  title?: string;
  /**
   * Its line of the startup summary, after `<title>: `: where clients find it. The WebSocket URLs
   * of its routes when omitted; `undefined` for no line.
   */
  summary?(context: ProtocolSummaryContext): string | undefined;
  /**
   * The path prefix of its OAuth protected resource (RFC 9728), when it has one of its own (MCP:
   * `/mcp`): a 401 on a path under it points at that resource's metadata.
   */
  protectedResource?: string;
}

/**
 * The protocols the gateway serves, so the core can name them without knowing them: the
 * protocols a token may be granted, the connection gauge's labels, the startup summary and
 * the OAuth protected resources. Each protocol module declares itself at start (`onModuleInit`);
 * a `@ProtocolGateway` route whose protocol nobody declared counts as a protocol of its own, so
 * a gateway class alone is granted, labelled and listed. Read it once every module has started.
 */
@Injectable()
export class ProtocolRegistry {
  private readonly declared = new Map<string, ProtocolDeclaration>();
  private gatewayRoutes?: ProtocolRouteOptions[];

  constructor(@Optional() private readonly discovery?: DiscoveryService) {}

  declare(declaration: ProtocolDeclaration): void {
    if (this.declared.has(declaration.name)) throw new Error(`Protocol "${declaration.name}" is declared twice`);
    this.declared.set(declaration.name, declaration);
  }

  /** Every protocol: the declared ones in the order they were declared, then those only a gateway route names. */
  list(): ProtocolDeclaration[] {
    const undeclared = this.routes()
      .map((route) => route.protocol)
      .filter((name) => !this.declared.has(name));
    return [...this.declared.values(), ...[...new Set(undeclared)].map((name) => ({ name }))];
  }

  names(): string[] {
    return this.list().map((protocol) => protocol.name);
  }

  /** Each protocol's line of the startup summary, `<title>: <where>`, in {@link list} order. */
  summaryLines(context: ProtocolSummaryContext): string[] {
    return this.list().flatMap((protocol) => {
      const where = protocol.summary ? protocol.summary(context) : this.routeUrls(protocol.name, context.ws);
      return where === undefined ? [] : [`${protocol.title ?? protocol.name}: ${where}`];
    });
  }

  /** The protected resource `path` belongs to (`/mcp` for `/mcp/...`), if a protocol declared one. */
  protectedResourceOf(path: string): string | undefined {
    return this.list()
      .map((protocol) => protocol.protectedResource)
      .find((prefix) => prefix !== undefined && (path === prefix || path.startsWith(`${prefix}/`)));
  }

  /** The WebSocket URLs of the protocol's routes, path parameters as `<name>`; `undefined` without routes. */
  private routeUrls(name: string, ws: string): string | undefined {
    const paths = this.routes()
      .filter((route) => route.protocol === name)
      .flatMap((route) => [route.path, ...(route.aliases ?? [])]);
    return paths.length === 0 ? undefined : paths.map((path) => `${ws}${path.replace(/:(\w+)/g, '<$1>')}`).join(', ');
  }

  /** The `@ProtocolGateway` routes of the app's providers, found once (they are fixed when the app is built). */
  private routes(): ProtocolRouteOptions[] {
    if (!this.gatewayRoutes) {
      const gateways = new Set((this.discovery?.getProviders() ?? []).map(({ metatype }) => metatype));
      this.gatewayRoutes = [...gateways].flatMap((gateway) => protocolRouteOf(gateway) ?? []);
    }
    return this.gatewayRoutes;
  }
}
