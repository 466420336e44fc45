import { Inject, Param, Post, Req, Res } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import type { Request, Response } from 'express';
import type { AuthenticatedRequest } from '../core/auth/bearer-auth.guard';
import { GatewayError, GatewayErrorCode } from '../core/errors/gateway-error';
import { eventStreamLimits } from '../core/http/event-stream';
import { httpStatusOfToolFailure } from '../core/errors/tool-failure-status';
import { CallScope, ProtocolController } from '../core/http/protocol-controller.decorator';
import type { ToolCallScope } from '../core/tools/tool-call-scope';
import type { ToolOutcome } from '../core/tools/tool-definition';
import { httpArgumentsOf } from './http-arguments';
import { STREAM_PARAMETER_PROBLEM, streamParameter } from './request-endpoint';
import { ToolEventStream } from './tool-event-stream';
import { errorOf, resultOf, toolErrorBody } from './utcp.frames';
import { UtcpService } from './utcp.service';

/**
 * One tool per path over HTTP, `POST /utcp/<tool>`, where the manual's `http` and `sse` call
 * templates (`GET /utcp?call_template=http`) point: the JSON body is the call's arguments (the
 * templates name it as their `body_field`), the answer the result as JSON (200), or with
 * `?stream=true` an event stream (see {@link ToolEventStream}).
 *
 * Failures are `{"type":"tool_error","error","code"}`, the WebSocket path's frame, with the
 * status of their code: 400 bad arguments or body, 401/403 auth, 404 unknown tool, 413 body too
 * large, 503 its upstream is down, 504 it timed out; a tool that failed answers 422, or the
 * status of the code it named ({@link httpStatusOfToolFailure}), and 500 only for a fault. Those
 * raised here go through the HTTP exception filter, in the format `UtcpModule` registers for `/utcp/`.
 *
 * A client that goes away stops its call: the tool's signal aborts and a streaming tool's
 * generator is closed. So does a streaming client that stops reading (see {@link ToolEventStream}).
 */
@ProtocolController({ protocol: 'utcp', path: 'utcp' })
export class UtcpToolController {
  constructor(
    private readonly utcp: UtcpService,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {}

  @Post(':tool')
  async call(
    @Param('tool') toolName: string,
    @Req() request: Request & AuthenticatedRequest,
    @Res() response: Response,
    @CallScope() scope: ToolCallScope,
  ): Promise<void> {
    const streaming = streamParameter(request.url);
    if (streaming === undefined) throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, STREAM_PARAMETER_PROBLEM);
    if (!this.utcp.serves(toolName, request.principal)) throw new GatewayError(GatewayErrorCode.TOOL_NOT_FOUND, `Unknown tool "${toolName}"`);
    const args = httpArgumentsOf(request);

    const stream = streaming ? new ToolEventStream(response, eventStreamLimits(this.config)) : undefined;
    const outcome = await this.utcp.call(scope, toolName, args, stream && ((value) => stream.result(value)));
    if (scope.signal?.aborted) return;
    if (stream?.started) {
      if (outcome.ok) stream.result(resultOf(outcome));
      else stream.failure(errorOf(outcome));
      stream.end();
    } else if (stream && outcome.ok) {
      stream.result(resultOf(outcome));
      stream.end();
    } else {
      answerWithJson(response, outcome);
    }
  }
}

/** A call's outcome as one JSON answer: the result, or a `tool_error` with its code's status. */
function answerWithJson(response: Response, outcome: ToolOutcome): void {
  if (outcome.ok) response.status(200).json(resultOf(outcome));
  else response.status(httpStatusOfToolFailure(outcome)).json(toolErrorBody(errorOf(outcome)));
}
