import type { Logger } from '@nestjs/common';
import { describeException } from '../core/errors/describe-exception';
import { GatewayError, GatewayErrorCode } from '../core/errors/gateway-error';
import type { LlmTool } from '../core/llm/llm.service';
import type { ToolDefinition, ToolFailureCode } from '../core/tools/tool-definition';

/** A catalogue tool as an OpenAI function tool: what the model is offered. */
export function toLlmTool(tool: ToolDefinition): LlmTool {
  const { $schema: _dialect, ...parameters } = tool.inputSchema;
  return { type: 'function', function: { name: tool.name, description: tool.description, parameters } };
}

/** Internal codes the LLM gateway spec has no word for, mapped onto its own (spec 5.4). */
const SPEC_CODE: Partial<Record<GatewayErrorCode, GatewayErrorCode>> = {
  TOOL_TIMEOUT: GatewayErrorCode.TOOL_EXECUTION_FAILED,
  TOOL_UNAVAILABLE: GatewayErrorCode.TOOL_EXECUTION_FAILED,
  PAYLOAD_TOO_LARGE: GatewayErrorCode.INVALID_MESSAGE,
  UNSUPPORTED_VERSION: GatewayErrorCode.INVALID_MESSAGE,
  UNAUTHORIZED: GatewayErrorCode.INVALID_MESSAGE,
  FORBIDDEN: GatewayErrorCode.INVALID_MESSAGE,
  NOT_FOUND: GatewayErrorCode.INVALID_MESSAGE,
};

const toSpecCode = (code: GatewayErrorCode): GatewayErrorCode => SPEC_CODE[code] ?? code;

/** A failed tool call's code as the spec names it (a server tool's timeout is TOOL_EXECUTION_FAILED, spec 7.7). */
export function llmCodeOfToolFailure(code: ToolFailureCode): GatewayErrorCode {
  return toSpecCode(code);
}

/** Any failure as the fields of an `error` frame, in the spec's vocabulary; internals are logged, not sent. */
export function describeLlmError(
  exception: unknown,
  logger: Logger,
): { code: GatewayErrorCode; message: string; details?: string } {
  const { code, message } = describeException(exception, logger);
  const details = exception instanceof GatewayError ? exception.details : undefined;
  return { code: toSpecCode(code), message, details };
}
