import type { ValidationError } from 'class-validator';

/**
 * Flattens class-validator errors, nested ones included, into one readable line:
 * `data.arguments must be an array; version must contain 3 elements`.
 */
export function describeValidationErrors(errors: ValidationError[], parent = ''): string {
  const messages: string[] = [];
  for (const error of errors) {
    const path = parent ? `${parent}.${error.property}` : error.property;
    for (const message of Object.values(error.constraints ?? {})) {
      messages.push(parent ? message.replace(new RegExp(`^${error.property}\\b`), path) : message);
    }
    if (error.children?.length) messages.push(describeValidationErrors(error.children, path));
  }
  return messages.filter(Boolean).join('; ');
}
