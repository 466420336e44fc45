import { GatewayError, GatewayErrorCode } from '../errors/gateway-error';
import { describeValidationErrors } from './validation-message';
import { JsonValidationPipe } from './json-validation.pipe';

/**
 * Validates a frame or body against its DTO (class-validator) and turns it into the DTO
 * instance; a failure is one INVALID_MESSAGE naming every bad field, which each protocol's
 * exception filter words in its own vocabulary.
 */
export const frameValidationPipe = new JsonValidationPipe({
  transform: true,
  forbidUnknownValues: false,
  exceptionFactory: (errors) => new GatewayError(GatewayErrorCode.INVALID_MESSAGE, describeValidationErrors(errors)),
});
