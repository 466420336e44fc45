import { Transform } from 'class-transformer';
import {
  ArrayMinSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsNumber,
  IsObject,
  IsOptional,
  IsString,
  Max,
  Min,
  MinLength,
} from 'class-validator';
import { LANGUAGE_CODES, LanguageCode } from '../../core/session/session';

/** Largest `max_tokens` a client may ask for; a runaway value would only tie the model up. */
export const MAX_TOKENS_CEILING = 32768;

const trimmed = () => Transform(({ value }) => (typeof value === 'string' ? value.trim() : value));

/** `text_input` (spec 4.1): what the user said. */
export class TextInputDto {
  @trimmed()
  @IsString({ message: 'text must be a string' })
  @MinLength(1, { message: 'Text cannot be empty' })
  text: string;

  /** The session whose context to use; the connection's current one when omitted. */
  @IsOptional()
  @IsString()
  @MinLength(1)
  session_id?: string;

  @IsOptional()
  @IsString()
  timestamp?: string;
}

/** `configure` (spec 4.2), plus this gateway's `language` and `clean_response` switches. */
export class ConfigureDto {
  @IsOptional()
  @IsNumber({}, { message: 'temperature must be a number' })
  @Min(0)
  @Max(1)
  temperature?: number;

  @IsOptional()
  @IsInt({ message: 'max_tokens must be an integer' })
  @Min(1)
  @Max(MAX_TOKENS_CEILING)
  max_tokens?: number;

  @IsOptional()
  @IsBoolean({ message: 'enable_context must be true or false' })
  enable_context?: boolean;

  /** The response language, one of the spec's ten codes. */
  @IsOptional()
  @IsIn(LANGUAGE_CODES)
  language?: LanguageCode;

  /** `false` turns cleaning for speech off for this connection (Markdown and emoji kept). */
  @IsOptional()
  @IsBoolean({ message: 'clean_response must be true or false' })
  clean_response?: boolean;
}

/** `start_session` (spec 4.3): resume `session_id`, or start a new session without one. */
export class StartSessionDto {
  @IsOptional()
  @IsString()
  @MinLength(1)
  session_id?: string;
}

/** `register_tools` (spec 4.6). Each tool's name and schema are checked on its own, so one bad tool fails alone. */
export class RegisterToolsDto {
  @IsArray({ message: 'tools must be an array' })
  @ArrayMinSize(1, { message: 'tools must list at least one tool' })
  @IsObject({ each: true, message: 'each tool must be an object with name, description and parameters' })
  tools: Record<string, unknown>[];
}

/** `tool_result` (spec 4.7): the device's answer to a `tool_callback`. */
export class ToolResultDto {
  @IsString()
  @MinLength(1)
  call_id: string;

  @IsBoolean({ message: 'success must be true or false' })
  success: boolean;

  @IsOptional()
  result?: unknown;

  @IsOptional()
  @IsString()
  error?: string | null;
}
