import 'reflect-metadata';
import { Type } from 'class-transformer';
import {
  IsArray,
  IsBoolean,
  IsIn,
  IsNotEmpty,
  IsNumber,
  IsObject,
  IsOptional,
  IsString,
  IsUrl,
  MaxLength,
  Min,
  ValidateBy,
  ValidateNested,
  ValidationOptions,
} from 'class-validator';

/** `type` spellings of the desktop clients; `http` and its aliases mean Streamable HTTP. */
export const SERVER_TYPES = ['stdio', 'http', 'streamable-http', 'streamableHttp', 'sse'] as const;
export type ServerType = (typeof SERVER_TYPES)[number];

/** An object whose every value is a string: `env` and `headers`. */
function IsStringRecord(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isStringRecord',
      validator: {
        validate: (value: unknown) =>
          value !== null && typeof value === 'object' && !Array.isArray(value) && Object.values(value).every((entry) => typeof entry === 'string'),
        defaultMessage: (args) => `${args?.property} must be an object of strings`,
      },
    },
    options,
  );
}

const HTTP_URL = { require_tld: false, require_protocol: true, protocols: ['http', 'https'] };

/**
 * The gateway's own OAuth client at the upstream's authorization server (client credentials,
 * `client_secret_basic`). The authorization server is found the MCP way, from the upstream's
 * 401 and its protected resource metadata (RFC 9728); `issuer` pins it, so the secret is never
 * sent to another server the upstream might name.
 */
export class UpstreamOAuthDto {
  @IsUrl(HTTP_URL, { message: 'issuer must be an http(s) URL' })
  issuer!: string;

  @IsString()
  @IsNotEmpty()
  clientId!: string;

  @IsString()
  @IsNotEmpty()
  clientSecret!: string;

  /** Asked for when the upstream's challenge and metadata name no scope. */
  @IsOptional()
  @IsString()
  scope?: string;
}

/**
 * One entry of `mcpServers`, in the format desktop MCP clients use: a local server started as a
 * child process (`command`, `args`, `env`, `cwd`) or a remote one (`url`, `headers`). The other
 * fields are this gateway's, all optional. Fields other clients add (`autoApprove`, ...) are
 * ignored, so a file can be shared with them.
 */
export class McpServerEntryDto {
  @IsOptional()
  @IsIn(SERVER_TYPES, { message: `type must be one of ${SERVER_TYPES.join(', ')}` })
  type?: ServerType;

  @IsOptional()
  @IsString()
  @IsNotEmpty()
  command?: string;

  @IsOptional()
  @IsArray()
  @IsString({ each: true })
  args?: string[];

  @IsOptional()
  @IsStringRecord()
  env?: Record<string, string>;

  @IsOptional()
  @IsString()
  cwd?: string;

  @IsOptional()
  @IsUrl(HTTP_URL, { message: 'url must be an http(s) URL' })
  url?: string;

  @IsOptional()
  @IsStringRecord()
  headers?: Record<string, string>;

  /** OAuth client credentials of the gateway's own for a remote server (tokens fetched, and fetched again when refused). */
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => UpstreamOAuthDto)
  oauth?: UpstreamOAuthDto;

  /** Put before each tool's name in the catalogue; `<server>.` when omitted, `""` for none. */
  @IsOptional()
  @IsString()
  @MaxLength(32)
  prefix?: string;

  /** Kept in the file but not connected. */
  @IsOptional()
  @IsBoolean()
  disabled?: boolean;

  /** Seconds for starting and `initialize`, and each `tools/list` or ping (MCP_UPSTREAM_CONNECT_TIMEOUT). */
  @IsOptional()
  @IsNumber()
  @Min(0.01)
  connectTimeout?: number;

  /** Seconds a tool call may take (MCP_UPSTREAM_CALL_TIMEOUT). */
  @IsOptional()
  @IsNumber()
  @Min(0.01)
  callTimeout?: number;
}
