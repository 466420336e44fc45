import { All, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { AccessTokenService } from '../core/auth/access-token.service';
import type { AuthenticatedRequest } from '../core/auth/bearer-auth.guard';
import { ProtocolController } from '../core/http/protocol-controller.decorator';
import { McpAuthGuard } from './mcp-auth.guard';
import { McpEnabledGuard } from './mcp-enabled.guard';
import { MCP_PROTOCOL } from './mcp.constants';
import { McpHttpSessions } from './transports/http/mcp-http-sessions.service';
import { ModernHttpRequests } from './transports/http/modern-http-requests';

/**
 * MCP Streamable HTTP at `/mcp`, so standard MCP clients and inspectors connect with a URL and a
 * bearer token: the 2026-07-28 revision's requests (`ModernHttpRequests`) and the 2025 revisions'
 * sessions (`McpHttpSessions`), told apart by what each request carries. Failures before it
 * (auth, an unreadable body) are JSON-RPC error bodies, by the format `McpModule` registers with
 * `HttpErrorFormats`.
 */
@ProtocolController({ protocol: MCP_PROTOCOL, path: 'mcp', before: [McpEnabledGuard], auth: McpAuthGuard })
export class McpController {
  constructor(
    private readonly sessions: McpHttpSessions,
    private readonly modern: ModernHttpRequests,
    private readonly tokens: AccessTokenService,
  ) {}

  @All()
  async serve(@Req() request: Request & AuthenticatedRequest, @Res() response: Response): Promise<void> {
    if (this.refusedForScope(request, response)) return;
    if (await this.modern.claims(request)) return this.modern.serve(request, response);
    return this.sessions.handle(request, response, request.body);
  }

  /**
   * Step-up (MCP authorization, RFC 6750): a JWT whose scopes do not cover a tool it calls, when
   * the tokens file's `oidc` rules grant that tool by a scope, is answered 403 with
   * `WWW-Authenticate: Bearer error="insufficient_scope", scope="..."`, so the client can ask
   * its authorization server for a token with that scope. Other refusals stay JSON-RPC errors.
   */
  private refusedForScope(request: Request & AuthenticatedRequest, response: Response): boolean {
    if (request.method !== 'POST' || !this.tokens.isJwtPrincipal(request.principal)) return false;
    const messages: unknown[] = Array.isArray(request.body) ? request.body : [request.body];
    for (const message of messages) {
      const call = message as { method?: unknown; id?: unknown; params?: { name?: unknown } } | null;
      if (call?.method !== 'tools/call' || typeof call.params?.name !== 'string') continue;
      const challenge = this.tokens.scopeChallenge(request.principal, call.params.name, '/mcp', request.headers.host);
      if (challenge === undefined) continue;
      response.setHeader('WWW-Authenticate', challenge);
      response.status(403).json({
        jsonrpc: '2.0',
        id: typeof call.id === 'string' || typeof call.id === 'number' ? call.id : null,
        error: { code: -32001, message: `Insufficient scope for tool "${call.params.name}"` },
      });
      return true;
    }
    return false;
  }
}
