import { Injectable } from '@nestjs/common';
import type { IncomingMessage } from 'http';
import type { Observable } from 'rxjs';
import { AccessTokenService } from '../core/auth/access-token.service';
import { GatewayError, GatewayErrorCode } from '../core/errors/gateway-error';
import type { ToolStreamEvent } from '../core/tools/tool-definition';
import { ToolRegistryService } from '../core/tools/tool-registry.service';
import type { GatewayConnection } from '../core/ws/gateway-connection';
import { publicWebSocketBase, STREAM_PARAMETER_PROBLEM, streamParameter } from './request-endpoint';
import { toUtcpManual } from './utcp.mapper';
import type { UtcpManual } from './utcp.types';

/**
 * UTCP's operations over the catalogue, shared by the HTTP manual, `/utcp` and `/utcp/<tool>`:
 * the manual of the shared tools, and calls on behalf of a connection.
 */
@Injectable()
export class UtcpService {
  constructor(
    private readonly registry: ToolRegistryService,
    private readonly tokens: AccessTokenService,
  ) {}

  /**
   * The manual of every shared tool, its call templates pointing where `request` reached the
   * gateway, streaming when `request` asked for it (`?stream=true`).
   */
  manual(request: IncomingMessage): UtcpManual {
    const streaming = streamParameter(request.url);
    if (streaming === undefined) throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, STREAM_PARAMETER_PROBLEM);
    return toUtcpManual(this.registry.list(), {
      baseUrl: publicWebSocketBase(request),
      streaming,
      authRequired: this.tokens.enabled,
    });
  }

  /** Whether `/utcp/<toolName>` exists: a shared tool of that name. */
  serves(toolName: string): boolean {
    return this.registry.get(toolName) !== undefined;
  }

  /** Calls a tool for `connection`: its partial results, then its outcome; unsubscribing cancels it. */
  call(connection: GatewayConnection, toolName: string, args: unknown): Observable<ToolStreamEvent> {
    return this.registry.stream(toolName, args, { principal: connection.principal, connectionId: connection.id });
  }
}
