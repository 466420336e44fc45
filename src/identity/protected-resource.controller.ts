import { Controller, Get, Inject, NotFoundException, Req } from '@nestjs/common';
import type { IncomingMessage } from 'http';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { AccessTokenService } from '../core/auth/access-token.service';
import { Public } from '../core/auth/route-access';

/** RFC 9728 protected resource metadata, as this gateway publishes it. */
export interface ProtectedResourceMetadata {
  resource: string;
  authorization_servers: string[];
  scopes_supported?: string[];
  bearer_methods_supported: string[];
  resource_name: string;
}

/**
 * The OAuth 2.0 protected resource metadata (RFC 9728) that MCP clients read after a 401
 * (`WWW-Authenticate: Bearer resource_metadata="..."`) to find the authorization servers
 * (`OIDC_ISSUERS`): at `/.well-known/oauth-protected-resource` for the gateway as a whole, and
 * path-suffixed at `/.well-known/oauth-protected-resource/mcp` for its MCP endpoint, whose
 * `resource` is then `<PUBLIC_URL>/mcp`. Not found while `OIDC_ISSUERS` is empty.
 */
@Controller('.well-known/oauth-protected-resource')
@Public()
export class ProtectedResourceController {
  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    private readonly tokens: AccessTokenService,
  ) {}

  @Get()
  gateway(@Req() request: IncomingMessage): ProtectedResourceMetadata {
    return this.metadata(request, '');
  }

  @Get('mcp')
  mcp(@Req() request: IncomingMessage): ProtectedResourceMetadata {
    return this.metadata(request, '/mcp');
  }

  private metadata(request: IncomingMessage, path: string): ProtectedResourceMetadata {
    const { oidc, publicUrl } = this.config.auth;
    if (oidc.issuers.length === 0) throw new NotFoundException('No authorization server is configured (OIDC_ISSUERS)');
    const base = publicUrl ?? `http://${request.headers.host ?? 'localhost'}`;
    const scopes = [...new Set([...oidc.scopes, ...this.tokens.oidcScopes()])];
    return {
      resource: `${base}${path}`,
      authorization_servers: oidc.issuers,
      ...(scopes.length > 0 ? { scopes_supported: scopes } : {}),
      bearer_methods_supported: ['header'],
      resource_name: 'Gateway',
    };
  }
}
