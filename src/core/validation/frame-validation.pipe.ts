import { ValidationPipe } from '@nestjs/common';
import { GatewayError, GatewayErrorCode } from '../errors/gateway-error';
import { describeValidationErrors } from './validation-message';

/**
 * Validates a protocol's frame or body DTOs (class-validator); a failure is an INVALID_MESSAGE
 * naming every bad field, which each protocol answers in its own vocabulary.
 */
export const frameValidationPipe = new ValidationPipe({
  transform: true,
  forbidUnknownValues: false,
  exceptionFactory: (errors) => new GatewayError(GatewayErrorCode.INVALID_MESSAGE, describeValidationErrors(errors)),
});
