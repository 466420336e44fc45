import { Logger } from '@nestjs/common';
import { AccessDeniedError } from '../core/auth/access-denied.error';
import { BudgetExceededError } from '../core/budgets/budget-exceeded.error';
import { describeException } from '../core/errors/describe-exception';
import { RateLimitedError } from '../core/limits/rate-limited.error';
import { GatewayError, GatewayErrorCode } from '../core/errors/gateway-error';
import type { ToolFailureCode } from '../core/tools/tool-definition';
import { errorFrame } from './llm-gateway.frames';
import type { ErrorFrame } from './protocol';

const logger = new Logger('LlmGateway');

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

/** Any failure as the spec's `error` frame (5.4), in its vocabulary; internals are logged, not sent. */
export function llmErrorFrame(error: unknown): ErrorFrame {
  // Codes of their own on this API: a client must tell a spent quota and a token's missing right from a bad frame.
  if (error instanceof RateLimitedError) return errorFrame(error.code, error.message, error.wait);
  if (error instanceof AccessDeniedError) return errorFrame(error.code, error.message);
  if (error instanceof BudgetExceededError) return errorFrame(error.code, error.message, error.budget);
  const { code, message } = describeException(error, logger);
  const details = error instanceof GatewayError ? error.details : undefined;
  return errorFrame(toSpecCode(code), message, details);
}
