import { Inject, Injectable, NestMiddleware, Optional } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { GatewayError, GatewayErrorCode } from '../errors/gateway-error';
import { CORE_OBSERVER, CoreObserver } from '../observability/core-observer';
import { boundAddressOf, OriginPolicy } from './origin-policy';

/** Headers a cross-origin page may send: auth, JSON bodies, and MCP Streamable HTTP's own. */
const ALLOWED_REQUEST_HEADERS = 'Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID';
/** Response headers a cross-origin page may read (MCP Streamable HTTP's session id). */
const EXPOSED_HEADERS = 'Mcp-Session-Id, Mcp-Protocol-Version, Retry-After, WWW-Authenticate';

/**
 * {@link OriginPolicy} on every HTTP request: a refused origin or host is a 403 in the route's
 * protocol's error format (the global filter words it), before any route or body parser runs.
 * A page of another origin that `ALLOWED_ORIGINS` lets in gets CORS answers, preflights
 * included, so a console served elsewhere can read the catalogue and call tools; tokens travel
 * in `Authorization`, never in cookies, so credentials are not allowed.
 */
@Injectable()
export class OriginMiddleware implements NestMiddleware {
  constructor(
    private readonly policy: OriginPolicy,
    @Optional() @Inject(CORE_OBSERVER) private readonly observer?: CoreObserver,
  ) {}

  use(request: Request, response: Response, next: NextFunction): void {
    const bound = boundAddressOf(request);
    const refusal = this.policy.refusal(request.headers, bound);
    if (refusal !== undefined) {
      this.observer?.refused('origin');
      throw new GatewayError(GatewayErrorCode.FORBIDDEN, refusal);
    }
    const { origin, host } = request.headers;
    if (origin !== undefined && this.policy.isCrossOriginAllowed(origin, host, bound)) {
      response.setHeader('Access-Control-Allow-Origin', origin);
      response.setHeader('Access-Control-Expose-Headers', EXPOSED_HEADERS);
      response.vary('Origin');
      if (request.method === 'OPTIONS' && request.headers['access-control-request-method'] !== undefined) {
        response.setHeader('Access-Control-Allow-Methods', 'GET, POST, DELETE, OPTIONS');
        response.setHeader('Access-Control-Allow-Headers', ALLOWED_REQUEST_HEADERS);
        response.setHeader('Access-Control-Max-Age', '600');
        response.status(204).end();
        return;
      }
    }
    next();
  }
}
