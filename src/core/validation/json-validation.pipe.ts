import { ValidationPipe } from '@nestjs/common';
import { ValidationError, ValidatorOptions, validateSync } from 'class-validator';

/**
 * Nest's `ValidationPipe` for values that came out of `JSON.parse` (WebSocket frames, JSON
 * bodies, stdio requests), which is every value the gateway validates. JSON holds neither
 * binary values nor sparse arrays, so the pipe's searches for them are skipped, and no DTO has
 * an async rule, so class-validator runs synchronously. Every frame of every protocol passes
 * here: see BENCHMARKS.md for what it saves.
 */
export class JsonValidationPipe extends ValidationPipe {
  protected override closeArrayGaps(): void {}

  protected override findNestedBinaryValues(): ValidationError[] {
    return [];
  }

  protected override validate(object: object, validatorOptions?: ValidatorOptions): ValidationError[] {
    return validateSync(object, validatorOptions);
  }
}
