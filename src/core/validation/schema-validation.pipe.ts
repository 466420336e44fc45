import type { PipeTransform } from '@nestjs/common';
import { GatewayError, GatewayErrorCode } from '../errors/gateway-error';
import { compileFrameSchema, FrameCheck, FrameSchema } from './frame-schema';

/**
 * Checks an HTTP body against the same compiled schema its protocol's frames use; a failure is
 * one INVALID_MESSAGE naming every bad field, which the route's error format words as usual.
 */
export class SchemaValidationPipe implements PipeTransform<unknown, unknown> {
  private readonly check: FrameCheck;

  constructor(schema: FrameSchema) {
    this.check = compileFrameSchema(schema);
  }

  transform(value: unknown): unknown {
    const problem = this.check(value);
    if (problem !== undefined) throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, problem);
    return value;
  }
}
