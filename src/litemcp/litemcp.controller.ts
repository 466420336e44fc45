import { Body, Get, Param, Post, Req, Res } from '@nestjs/common';
import type { Response } from 'express';
import type { AuthenticatedRequest } from '../core/auth/bearer-auth.guard';
import { httpStatusOf } from '../core/errors/describe-exception';
import { CallScope, ProtocolController } from '../core/http/protocol-controller.decorator';
import type { ToolCallScope } from '../core/tools/tool-call-scope';
import type { ToolFailureCode } from '../core/tools/tool-definition';
import { SchemaValidationPipe } from '../core/validation/schema-validation.pipe';
import { ToolCall, toolCallSchema } from './dto/litemcp.dto';
import type { LiteMcpTool } from './litemcp.frames';
import { LiteMcpService } from './litemcp.service';

/** Failures where the tool never ran get their own status; a tool that ran and failed is a 200. */
const NOT_RUN = new Set<ToolFailureCode>(['INVALID_TOOL_PARAMETERS', 'TOOL_NOT_FOUND', 'TOOL_UNAVAILABLE']);

/**
 * LiteMCP's HTTP transport on the same paths as its WebSocket: `GET /litemcp/<tool>` returns
 * the Tool, `POST /litemcp/<tool>` with a ToolCall returns a CallResult. Statuses follow the
 * spec's transport: 200 for an answered call (`error: true` when the tool failed), 400 for
 * bad arguments, 401/403 for auth, 404 for an unknown tool, 503 for a tool whose upstream is down.
 * Errors are shaped by the format `LiteMcpModule` registers with `HttpErrorFormats`.
 */
@ProtocolController({ protocol: 'litemcp', path: 'litemcp' })
export class LiteMcpController {
  constructor(private readonly liteMcp: LiteMcpService) {}

  @Get(':tool')
  describe(@Param('tool') tool: string, @Req() request: AuthenticatedRequest): LiteMcpTool {
    return this.liteMcp.describe(tool, undefined, request.principal);
  }

  @Post(':tool')
  async call(
    @Param('tool') tool: string,
    @Body(new SchemaValidationPipe(toolCallSchema)) call: ToolCall,
    @CallScope() scope: ToolCallScope,
    @Res({ passthrough: true }) response: Response,
  ) {
    const { result, failure } = await this.liteMcp.call(scope, tool, call);
    response.status(failure && NOT_RUN.has(failure) ? httpStatusOf(failure) : 200);
    return result;
  }
}
