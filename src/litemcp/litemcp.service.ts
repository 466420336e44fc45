import { Injectable } from '@nestjs/common';
import { GatewayError, GatewayErrorCode } from '../core/errors/gateway-error';
import { MaybePromise, thenMaybe } from '../core/maybe-promise';
import { ToolCallService } from '../core/tools/tool-call.service';
import type { ToolCallScope } from '../core/tools/tool-call-scope';
import type { ToolFailureCode } from '../core/tools/tool-definition';
import { ToolRegistryService } from '../core/tools/tool-registry.service';
import type { ToolCall } from './dto/litemcp.dto';
import { LITEMCP_VERSION, LiteMcpCallResult, LiteMcpTool } from './litemcp.frames';
import { coerceArguments, failedCallResult, toCallResult, toLiteMcpTool } from './litemcp.mapper';

/** A CallResult, and the failure's code when the call failed (HTTP picks its status from it). */
export interface LiteMcpCallOutcome {
  result: LiteMcpCallResult;
  failure?: ToolFailureCode;
}

/**
 * LiteMCP's two operations over the catalogue, shared by the WebSocket, HTTP and stdio
 * transports. Problems with the request itself (wrong version, wrong tool for the endpoint)
 * are thrown as {@link GatewayError}s; a call that reaches the tool always ends in a CallResult.
 */
@Injectable()
export class LiteMcpService {
  constructor(
    private readonly registry: ToolRegistryService,
    private readonly toolCalls: ToolCallService,
  ) {}

  /** `get`: the endpoint's tool, when `principal` may see it. */
  describe(toolName: string, version?: readonly number[], principal?: string): LiteMcpTool {
    assertSupportedVersion(version);
    return toLiteMcpTool(this.toolOrThrow(toolName, principal));
  }

  /**
   * `call`: runs the endpoint's tool with the positional arguments within `scope`; at once when
   * the tool answers at once. A call over the caller's rate limit, or over its connection's calls
   * in flight, throws (or rejects with) `RateLimitedError` or `TooManyCallsError`.
   */
  call(scope: ToolCallScope, toolName: string, call: ToolCall): MaybePromise<LiteMcpCallOutcome> {
    assertSupportedVersion(call.version);
    if (call.tool !== toolName) {
      throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, `This endpoint serves tool "${toolName}", but the call names "${call.tool}"`);
    }
    const coerced = coerceArguments(this.toolOrThrow(toolName, scope.principal), call.arguments.map(String));
    if (!coerced.ok) return { result: failedCallResult(coerced.params, coerced.problem), failure: 'INVALID_TOOL_PARAMETERS' };
    return thenMaybe(this.toolCalls.call(scope, toolName, coerced.args), (outcome) => ({
      result: toCallResult(coerced.params, outcome),
      failure: outcome.ok ? undefined : outcome.code,
    }));
  }

  /** Whether the endpoint `/litemcp/<toolName>` exists for `principal` (a shared tool of that name it may see). */
  serves(toolName: string, principal?: string): boolean {
    return this.registry.get(toolName, undefined, principal, 'agent') !== undefined;
  }

  private toolOrThrow(toolName: string, principal?: string) {
    const tool = this.registry.get(toolName, undefined, principal, 'agent');
    if (!tool) throw new GatewayError(GatewayErrorCode.TOOL_NOT_FOUND, `Unknown tool "${toolName}"`);
    return tool;
  }
}

function assertSupportedVersion(version: readonly number[] | undefined): void {
  if (version !== undefined && version[0] !== LITEMCP_VERSION[0]) {
    throw new GatewayError(
      GatewayErrorCode.UNSUPPORTED_VERSION,
      `LiteMCP version ${version.join('.')} is not supported; this server speaks ${LITEMCP_VERSION.join('.')}`,
    );
  }
}
