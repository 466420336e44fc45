import { Injectable } from '@nestjs/common';
import type { IncomingMessage } from 'http';
import { AccessTokenService } from '../core/auth/access-token.service';
import { GatewayError, GatewayErrorCode } from '../core/errors/gateway-error';
import type { MaybePromise } from '../core/maybe-promise';
import type { ToolOutcome } from '../core/tools/tool-definition';
import { ToolRegistryService } from '../core/tools/tool-registry.service';
import type { FrameConnection } from '../core/ws/connection';
import { publicWebSocketBase, STREAM_PARAMETER_PROBLEM, streamParameter } from './request-endpoint';
import type { UtcpManual } from './utcp.frames';
import { toUtcpManual } from './utcp.mapper';

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

  /**
   * Calls a tool for `connection`: each partial result to `onPartial`, then the outcome (at once
   * when the tool answered at once). The call stops when the connection closes.
   */
  call(connection: FrameConnection, toolName: string, args: unknown, onPartial?: (value: unknown) => void): MaybePromise<ToolOutcome> {
    return this.registry.invoke(toolName, args, {
      principal: connection.principal,
      connectionId: connection.id,
      signal: connection.signal,
      onPartial,
    });
  }
}
