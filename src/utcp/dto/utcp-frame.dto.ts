import { IsNotEmpty, IsOptional, IsString, ValidateBy, ValidationOptions } from 'class-validator';
import { isRequestId } from '../utcp-frames';
import type { UtcpRequestId } from '../utcp.types';

function IsRequestId(options?: ValidationOptions): PropertyDecorator {
  const defaultMessage = () => 'id must be a non-empty string (up to 256 characters) or a number';
  return ValidateBy({ name: 'isRequestId', validator: { validate: isRequestId, defaultMessage } }, options);
}

/** UTCP 0.1 `{"type":"call","tool","id","params"}`. `params` is checked against the tool's schema, not here. */
export class UtcpCallFrameDto {
  @IsRequestId()
  id: UtcpRequestId;

  @IsString({ message: 'tool must be a non-empty string' })
  @IsNotEmpty({ message: 'tool must be a non-empty string' })
  tool: string;

  params?: unknown;
}

/** `{"type":"discover","id"?}`: the 0.1-style discovery message, answered with `discovery_response`. */
export class UtcpDiscoverFrameDto {
  @IsOptional()
  @IsRequestId()
  id?: UtcpRequestId;
}
