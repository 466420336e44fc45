import { Transform, Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsIn,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Min,
  ValidateIf,
  ValidateNested,
} from 'class-validator';

/** A LiteMCP version triple, `[major, minor, patch]`. */
export type LiteMcpVersion = [number, number, number];

function IsVersion(): PropertyDecorator {
  return (target, key) => {
    IsArray({ message: `${String(key)} must be an array [major, minor, patch]` })(target, key);
    ArrayMinSize(3, { message: `${String(key)} must be an array [major, minor, patch]` })(target, key);
    ArrayMaxSize(3, { message: `${String(key)} must be an array [major, minor, patch]` })(target, key);
    IsInt({ each: true, message: `${String(key)} must hold three non-negative integers` })(target, key);
    Min(0, { each: true, message: `${String(key)} must hold three non-negative integers` })(target, key);
  };
}

/**
 * `ToolCall`: the tool's name and its arguments as positional strings, in the order of the
 * tool's `parameters`. Numbers and booleans are accepted too and read as their text, since
 * clients written loosely send them; anything else is refused.
 */
export class ToolCallDto {
  @IsOptional()
  @IsVersion()
  version?: LiteMcpVersion;

  @IsString()
  tool: string;

  @Transform(({ value }) =>
    Array.isArray(value)
      ? value.map((item) => (typeof item === 'number' || typeof item === 'boolean' ? String(item) : item))
      : value,
  )
  @IsArray()
  @IsString({ each: true, message: 'arguments must be an array of strings' })
  arguments: string[];
}

/** `IOBasic`, the envelope of every LiteMCP request. */
export class LiteMcpFrameDto {
  @IsVersion()
  version: LiteMcpVersion;

  @IsInt({ message: 'id must be an integer' })
  id: number;

  @IsIn(['get', 'call'])
  type: 'get' | 'call';
}

/** `get`: data is null or `{}`. */
export class LiteMcpGetFrameDto extends LiteMcpFrameDto {
  @ValidateIf((frame: LiteMcpGetFrameDto) => frame.data !== null && frame.data !== undefined)
  @IsObject({ message: 'data must be null or {} for a "get" request' })
  data?: Record<string, unknown> | null;
}

/** `call`: data is a {@link ToolCallDto}. */
export class LiteMcpCallFrameDto extends LiteMcpFrameDto {
  @IsObject({ message: 'data must be a ToolCall object for a "call" request' })
  @ValidateNested()
  @Type(() => ToolCallDto)
  data: ToolCallDto;
}
