import { Injectable } from '@nestjs/common';
import type { IncomingMessage } from 'http';
import { AccessTokenService } from '../core/auth/access-token.service';
import { GatewayError, GatewayErrorCode } from '../core/errors/gateway-error';
import { MaybePromise } from '../core/maybe-promise';
import { ToolCallService } from '../core/tools/tool-call.service';
import type { ToolCallScope } from '../core/tools/tool-call-scope';
import type { ToolOutcome } from '../core/tools/tool-definition';
import { ToolRegistryService } from '../core/tools/tool-registry.service';
import { queryParameter } from '../core/http/query-parameter';
import {
  CALL_TEMPLATE_PARAMETER_PROBLEM,
  callTemplateParameter,
  publicHttpBase,
  publicWebSocketBase,
  STREAM_PARAMETER_PROBLEM,
  streamParameter,
} from './request-endpoint';
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
    private readonly toolCalls: ToolCallService,
  ) {}

  /**
   * The manual of every shared tool, its call templates pointing where `request` reached the
   * gateway: websocket ones, or with `?call_template=http` HTTP ones (`http`, and `sse` for
   * tools that stream). `?stream=true` makes every template stream and `?stream=false` none;
   * without it, websocket templates do not stream and HTTP ones stream for streaming tools.
   */
  manual(request: IncomingMessage, principal: string | undefined): UtcpManual {
    const callTemplate = callTemplateParameter(request.url);
    if (callTemplate === undefined) throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, CALL_TEMPLATE_PARAMETER_PROBLEM);
    const streaming = streamParameter(request.url);
    if (streaming === undefined) throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, STREAM_PARAMETER_PROBLEM);
    const overHttp = callTemplate === 'http';
    return toUtcpManual(this.registry.list(undefined, principal, 'agent'), {
      baseUrl: overHttp ? publicHttpBase(request) : publicWebSocketBase(request),
      callTemplate,
      streaming: overHttp && queryParameter(request.url, 'stream') === null ? 'per-tool' : streaming,
      authRequired: this.tokens.enabled,
    });
  }

  /** Whether `/utcp/<toolName>` exists for `principal`: a shared tool of that name it may see. */
  serves(toolName: string, principal?: string): boolean {
    return this.registry.get(toolName, undefined, principal, 'agent') !== undefined;
  }

  /**
   * Calls a tool within `scope` (a connection's, or an HTTP request's): each partial result to
   * `onPartial`, then the outcome (at once when the tool answered at once). A call over the
   * token's rate limit or the connection's calls in flight throws (or rejects with)
   * `RateLimitedError` or `TooManyCallsError`.
   */
  call(scope: ToolCallScope, toolName: string, args: unknown, onPartial?: (value: unknown) => void): MaybePromise<ToolOutcome> {
    return this.toolCalls.call(scope, toolName, args, onPartial && { onPartial });
  }
}
