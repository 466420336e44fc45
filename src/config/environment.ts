import { Transform, plainToInstance } from 'class-transformer';
import {
  IsBoolean,
  IsIn,
  IsInt,
  IsNumber,
  IsObject,
  IsOptional,
  IsString,
  IsUrl,
  Matches,
  Max,
  Min,
  MinLength,
  ValidateIf,
  validateSync,
} from 'class-validator';
import { StartupError } from '../core/errors/startup-error';

/** Spellings accepted for a boolean variable; anything else is reported as invalid. */
const TRUE_WORDS = new Set(['true', '1', 'yes', 'on']);
const FALSE_WORDS = new Set(['false', '0', 'no', 'off']);

/**
 * Env values arrive as strings; class-transformer's implicit conversion would turn "false"
 * into `true`, so booleans are parsed explicitly and anything unrecognised is left as the
 * original string for `@IsBoolean()` to reject with the variable's name.
 */
function BooleanFromEnv(): PropertyDecorator {
  return Transform(({ value }) => {
    if (typeof value === 'boolean') return value;
    const word = String(value).trim().toLowerCase();
    if (TRUE_WORDS.has(word)) return true;
    if (FALSE_WORDS.has(word)) return false;
    return value;
  });
}

/** Numbers are converted only when the whole string is numeric, so "9400abc" is rejected. */
function NumberFromEnv(): PropertyDecorator {
  return Transform(({ value }) => {
    if (typeof value === 'number') return value;
    const text = String(value).trim();
    return text !== '' && Number.isFinite(Number(text)) ? Number(text) : value;
  });
}

/** A JSON object from its text; anything else is left as it is, for the validator to reject. */
function parseJsonObject(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  try {
    const parsed: unknown = JSON.parse(value);
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : value;
  } catch {
    return value;
  }
}

/** Log levels in the spec's Python spelling, plus Nest's own names. */
export const LOG_LEVELS = ['DEBUG', 'VERBOSE', 'INFO', 'LOG', 'WARNING', 'WARN', 'ERROR', 'CRITICAL', 'FATAL'] as const;
export type LogLevelName = (typeof LOG_LEVELS)[number];

/**
 * Every environment variable the gateway reads, with the specs' names and defaults.
 * Validated once at boot; the rest of the code reads the typed {@link GatewayConfig}.
 * Units follow the specs: seconds for `CLOUD_*`, `LLM_TIMEOUT` and `CLIENT_TOOL_TIMEOUT`,
 * milliseconds for the `MCP_WS_*` timings.
 */
export class EnvironmentVariables {
  // --- server (LLM gateway spec 8.1) ---
  /**
   * Where the HTTP server listens. Unset: every interface (0.0.0.0) when tokens are configured
   * (`AUTH_TOKENS` or `AUTH_TOKENS_FILE`),
   * loopback (127.0.0.1) when they are not, so an open gateway is never reachable by accident
   * (the spec's default is 0.0.0.0 either way).
   */
  @IsOptional()
  @IsString()
  @MinLength(1)
  CLOUD_HOST?: string;

  @NumberFromEnv()
  @IsInt()
  @Min(0)
  @Max(65535)
  CLOUD_PORT = 9400;

  @NumberFromEnv()
  @IsNumber()
  @Min(0.01)
  CLOUD_PING_INTERVAL = 30;

  @NumberFromEnv()
  @IsNumber()
  @Min(0.01)
  CLOUD_PING_TIMEOUT = 300;

  @NumberFromEnv()
  @IsInt()
  @Min(1)
  CLOUD_MAX_CONNECTIONS = 100;

  @NumberFromEnv()
  @IsNumber()
  @Min(0.01)
  CLOUD_SESSION_TIMEOUT = 3600;

  /** WebSocket connections of every protocol at once; past it an upgrade is refused with 503. */
  @NumberFromEnv()
  @IsInt()
  @Min(1)
  WS_MAX_CONNECTIONS = 1000;

  /** LiteMCP and UTCP WebSocket connections, each protocol (the LLM gateway and MCP have their own caps); past it 503. */
  @NumberFromEnv()
  @IsInt()
  @Min(1)
  WS_MAX_CONNECTIONS_PER_PROTOCOL = 200;

  /** WebSocket connections one remote address may hold; past it 429. 0: no limit. */
  @NumberFromEnv()
  @IsInt()
  @Min(0)
  WS_MAX_CONNECTIONS_PER_ADDRESS = 100;

  /** WebSocket connections one token may hold (not counted while auth is off); past it 429. 0: no limit. */
  @NumberFromEnv()
  @IsInt()
  @Min(0)
  WS_MAX_CONNECTIONS_PER_PRINCIPAL = 200;

  /** Sockets still to send their auth frame (UTCP, the MCP envelope), all routes together; past it 503. */
  @NumberFromEnv()
  @IsInt()
  @Min(1)
  WS_MAX_UNAUTHENTICATED = 100;

  /**
   * Bytes a socket may send before it has authenticated (the auth frame is small; a JWT fits
   * easily); past it the socket is closed with 1009. With WS_MAX_UNAUTHENTICATED, bounds what
   * clients without a token can make the gateway hold.
   */
  @NumberFromEnv()
  @IsInt()
  @Min(1024)
  WS_UNAUTHENTICATED_MAX_BYTES = 65536;

  /** Seconds a socket that authenticates by message gets to send its auth frame (UTCP; MCP envelope: MCP_WS_AUTH_TIMEOUT). */
  @NumberFromEnv()
  @IsNumber()
  @Min(0.01)
  WS_AUTH_TIMEOUT = 10;

  /** Bytes a connection may have waiting to be sent to a client that does not read; past it the connection is closed (1008). */
  @NumberFromEnv()
  @IsInt()
  @Min(65536)
  WS_MAX_BUFFERED_BYTES = 4_194_304;

  /** Tool calls one WebSocket connection (MCP, LiteMCP, UTCP) or MCP Streamable HTTP session may have running at once; past it a call is refused as rate limited. */
  @NumberFromEnv()
  @IsInt()
  @Min(1)
  WS_MAX_CALLS_IN_FLIGHT = 64;


  /** Messages of history a session keeps (spec 6.2: 10). */
  @NumberFromEnv()
  @IsInt()
  @Min(0)
  CLOUD_SESSION_MAX_HISTORY = 10;

  /**
   * LLM-gateway sessions one token keeps (not counted while auth is off); a new one past it
   * removes that token's least recently active session. 0: no limit.
   */
  @NumberFromEnv()
  @IsInt()
  @Min(0)
  CLOUD_SESSION_MAX_PER_PRINCIPAL = 1000;

  /** How often expired sessions are removed, in seconds (spec 6.2: 60). */
  @NumberFromEnv()
  @IsNumber()
  @Min(0.01)
  CLOUD_SESSION_CLEANUP_INTERVAL = 60;

  /** Redis for sessions, shared by every instance (`redis://[:password@]host:port[/db]`); in-memory sessions when unset. */
  @IsOptional()
  @Matches(/^rediss?:\/\/\S+$/, { message: 'REDIS_URL must be a redis:// or rediss:// URL' })
  REDIS_URL?: string;

  /** Prefix of every Redis key and channel the gateway uses, so deployments can share a Redis. */
  @IsString()
  @MinLength(1)
  REDIS_KEY_PREFIX = 'vtg:';

  /** On SIGTERM, how long the tool calls and turns in flight, on every protocol, may take to finish before sockets are closed, in seconds. */
  @NumberFromEnv()
  @IsNumber()
  @Min(0)
  SHUTDOWN_DRAIN_TIMEOUT = 10;

  /** Largest accepted WebSocket frame or HTTP body, in bytes (spec 12.1: 1 MB). */
  @NumberFromEnv()
  @IsInt()
  @Min(1024)
  CLOUD_MAX_MESSAGE_SIZE = 1048576;

  /** Seconds a new connection gets to send its first request's headers (a WebSocket upgrade included); then it is dropped. */
  @NumberFromEnv()
  @IsNumber()
  @Min(0.1)
  HTTP_HEADERS_TIMEOUT = 10;

  /** Connections still sending their first request's headers, on each listener; past it a new connection is dropped at once. */
  @NumberFromEnv()
  @IsInt()
  @Min(1)
  HTTP_MAX_INCOMPLETE_REQUESTS = 1000;

  @Transform(({ value }) => String(value).trim().toUpperCase())
  @IsIn(LOG_LEVELS)
  CLOUD_LOG_LEVEL: LogLevelName = 'INFO';

  @Transform(({ value }) => String(value).trim().toLowerCase())
  @IsIn(['json', 'text'])
  CLOUD_LOG_FORMAT: 'json' | 'text' = 'json';

  // --- auth (one bearer check for every protocol) ---
  /** Comma-separated bearer tokens; empty leaves the shared routes open. */
  @IsString()
  AUTH_TOKENS = '';

  /** Let the gateway listen beyond loopback with no tokens (anyone who reaches it may use the model and every tool). */
  @BooleanFromEnv()
  @IsBoolean()
  ALLOW_UNAUTHENTICATED = false;

  /** Named tokens with permissions, rate limits and connection caps (YAML or JSON), reloaded when it changes. */
  @IsOptional()
  @IsString()
  AUTH_TOKENS_FILE?: string;

  /** Seconds of the rate limits' window (the tokens file's `*_per_minute`); 60 unless a test or a burst policy wants otherwise. */
  @NumberFromEnv()
  @IsNumber()
  @Min(0.1)
  RATE_LIMIT_WINDOW = 60;

  /**
   * Comma-separated origins (`https://console.example.com`) whose browser pages may use the
   * gateway besides its own pages (and localhost pages when it listens on loopback); `*` any.
   */
  @IsString()
  @Matches(/^\s*(\*|(https?:\/\/[^\s,/]+\s*)(,\s*https?:\/\/[^\s,/]+\s*)*)?\s*$/i, {
    message: 'ALLOWED_ORIGINS must be "*" or comma-separated origins such as https://console.example.com',
  })
  ALLOWED_ORIGINS = '';

  /**
   * Comma-separated host names (a reverse proxy's public name) the `Host` header may carry when
   * the gateway listens on loopback, besides localhost names; DNS rebinding protection.
   */
  @IsString()
  ALLOWED_HOSTS = '';

  // --- tools ---
  /** Default time limit for a server tool, in seconds (spec 7.7: 10 s). */
  @NumberFromEnv()
  @IsNumber()
  @Min(0.01)
  SERVER_TOOL_TIMEOUT = 10;

  /** IANA zone used when a caller gives none; the machine's zone when unset. */
  @IsOptional()
  @IsString()
  DEFAULT_TIMEZONE?: string;

  // --- LLM (spec 8.2) ---
  @IsUrl({ require_tld: false, require_protocol: true, protocols: ['http', 'https'] })
  LLM_BASE_URL = 'http://127.0.0.1:8000/v1/';

  @IsString()
  @MinLength(1)
  LLM_MODEL = 'Qwen3-30B-A3B';

  @IsOptional()
  @IsString()
  LLM_API_KEY?: string;

  @NumberFromEnv()
  @IsNumber()
  @Min(0.01)
  LLM_TIMEOUT = 120;

  @NumberFromEnv()
  @IsNumber()
  @Min(0)
  @Max(1)
  LLM_TEMPERATURE = 0.7;

  @NumberFromEnv()
  @IsInt()
  @Min(1)
  LLM_MAX_TOKENS = 2048;

  @BooleanFromEnv()
  @IsBoolean()
  LLM_ENABLE_CONTEXT = false;

  /** Retries of a failed LLM request (connection errors, 429, 5xx) before LLM_ERROR. */
  @NumberFromEnv()
  @IsInt()
  @Min(0)
  LLM_MAX_RETRIES = 1;

  /** Most model calls in one turn; the last is made without tools so the model must answer. */
  @NumberFromEnv()
  @IsInt()
  @Min(1)
  LLM_MAX_TOOL_ROUNDS = 5;

  /** Characters of one tool result the model reads; a longer one is cut, with a note saying so and how long it was. */
  @NumberFromEnv()
  @IsInt()
  @Min(256)
  LLM_MAX_TOOL_RESULT_CHARS = 16_000;

  /** Characters of a server tool's result a `tool_call` frame echoes to the device; a longer one is sent as a preview this long, with its size. */
  @NumberFromEnv()
  @IsInt()
  @Min(0)
  LLM_TOOL_CALL_ECHO_CHARS = 1000;

  /** Replaces the spec's system prompt (14.1); `{current_time}` is filled in. */
  @IsOptional()
  @IsString()
  LLM_SYSTEM_PROMPT?: string;

  /** A file holding the system prompt, for prompts too long for a variable. */
  @IsOptional()
  @IsString()
  LLM_SYSTEM_PROMPT_FILE?: string;

  /**
   * JSON merged into every model request, for vendor options the OpenAI API has no field for:
   * `{"chat_template_kwargs":{"enable_thinking":false}}` turns Qwen3's thinking off on vLLM.
   */
  @IsOptional()
  @Transform(({ value }) => parseJsonObject(value))
  @IsObject({ message: 'LLM_EXTRA_BODY must be a JSON object, such as {"chat_template_kwargs":{"enable_thinking":false}}' })
  LLM_EXTRA_BODY?: Record<string, unknown>;

  /** Whether connections stream sentences (`configure {stream}`) until they say otherwise. */
  @BooleanFromEnv()
  @IsBoolean()
  LLM_STREAM_DEFAULT = false;

  /** Seconds a tool round of a streaming turn may take before a short filler sentence is spoken; 0 never. */
  @NumberFromEnv()
  @IsNumber()
  @Min(0)
  TOOL_FILLER_DELAY = 1.5;

  // --- built-in tools ---
  /** Open-Meteo's geocoding API (keyless), for get_weather. */
  @IsUrl({ require_tld: false, require_protocol: true, protocols: ['http', 'https'] })
  WEATHER_GEOCODING_URL = 'https://geocoding-api.open-meteo.com/v1/search';

  /** Open-Meteo's forecast API (keyless), for get_weather. */
  @IsUrl({ require_tld: false, require_protocol: true, protocols: ['http', 'https'] })
  WEATHER_FORECAST_URL = 'https://api.open-meteo.com/v1/forecast';

  /** Where the assistant is, for get_location and get_weather without a city. */
  @IsOptional()
  @IsString()
  LOCATION_CITY?: string;

  @IsOptional()
  @IsString()
  LOCATION_COUNTRY?: string;

  @NumberFromEnv()
  @IsOptional()
  @IsNumber()
  @Min(-90)
  @Max(90)
  LOCATION_LATITUDE?: number;

  @NumberFromEnv()
  @IsOptional()
  @IsNumber()
  @Min(-180)
  @Max(180)
  LOCATION_LONGITUDE?: number;

  /** IP geolocation service asked when LOCATION_CITY is unset (ipwho.is / ip-api.com JSON); `off` turns it off. */
  @ValidateIf((env: EnvironmentVariables) => env.LOCATION_PROVIDER_URL !== 'off')
  @IsUrl(
    { require_tld: false, require_protocol: true, protocols: ['http', 'https'] },
    { message: 'LOCATION_PROVIDER_URL must be an http(s) URL or "off"' },
  )
  LOCATION_PROVIDER_URL = 'https://ipwho.is/';

  /** The role-play characters (JSON); the shipped data/characters.json when unset. */
  @IsOptional()
  @IsString()
  ROLEPLAY_CHARACTERS_FILE?: string;

  // --- MCP (spec 8.3) ---
  @BooleanFromEnv()
  @IsBoolean()
  MCP_ENABLED = true;

  @IsString()
  @MinLength(1)
  MCP_SERVER_NAME = 'arcs-mini-mcp-server';

  @Matches(/^\d{4}-\d{2}-\d{2}$/, { message: 'MCP_PROTOCOL_VERSION must be a date-shaped MCP version such as 2024-11-05' })
  MCP_PROTOCOL_VERSION = '2024-11-05';

  // --- upstream MCP servers, aggregated into the catalogue ---
  /** JSON file in the desktop clients' format, `{"mcpServers": {...}}`; none when unset. */
  @IsOptional()
  @IsString()
  MCP_SERVERS_FILE?: string;

  /** Seconds an upstream may take to start and answer `initialize`, and each `tools/list` or ping. */
  @NumberFromEnv()
  @IsNumber()
  @Min(0.01)
  MCP_UPSTREAM_CONNECT_TIMEOUT = 30;

  /** Seconds an upstream tool call may take; SERVER_TOOL_TIMEOUT when unset. */
  @NumberFromEnv()
  @IsOptional()
  @IsNumber()
  @Min(0.01)
  MCP_UPSTREAM_CALL_TIMEOUT?: number;

  /** Seconds between liveness pings of a connected upstream; 0 turns pinging off. */
  @NumberFromEnv()
  @IsNumber()
  @Min(0)
  MCP_UPSTREAM_PING_INTERVAL = 30;

  /** Seconds before the first reconnection attempt; doubled per failure up to MCP_UPSTREAM_RETRY_MAX. */
  @NumberFromEnv()
  @IsNumber()
  @Min(0.01)
  MCP_UPSTREAM_RETRY_MIN = 1;

  @NumberFromEnv()
  @IsNumber()
  @Min(0.01)
  MCP_UPSTREAM_RETRY_MAX = 60;

  /**
   * Bytes one message of an upstream MCP server may be (a stdio line, an HTTP body or event
   * line); a larger answer is not held: its call fails naming this setting, and the upstream
   * keeps its tools. Under WS_MAX_BUFFERED_BYTES, so WebSocket clients can take a result this size.
   */
  @NumberFromEnv()
  @IsInt()
  @Min(65536)
  MCP_UPSTREAM_MAX_RESULT_BYTES = 2_097_152;

  // --- MCP over WebSocket, dedicated listener (MCP-WS spec 8) ---
  @IsString()
  @MinLength(1)
  MCP_WS_HOST = '127.0.0.1';

  /** Port of the dedicated MCP listener; 0 turns it off. */
  @NumberFromEnv()
  @IsInt()
  @Min(0)
  @Max(65535)
  MCP_WS_PORT = 8765;

  @IsOptional()
  @IsString()
  MCP_WS_AUTH_TOKEN?: string;

  /**
   * Where the MCP token generated for a run (no MCP_WS_AUTH_TOKEN, no AUTH_TOKENS) is written,
   * readable by its owner only, instead of being printed: for a supervisor that hands it on.
   */
  @IsOptional()
  @IsString()
  MCP_WS_AUTH_TOKEN_FILE?: string;

  /** The spec's placeholder token "ChangeMe!" is refused unless this is set. */
  @BooleanFromEnv()
  @IsBoolean()
  MCP_WS_ALLOW_DEFAULT_TOKEN = false;

  @NumberFromEnv()
  @IsInt()
  @Min(10)
  MCP_WS_HEARTBEAT_INTERVAL = 30000;

  @NumberFromEnv()
  @IsInt()
  @Min(10)
  MCP_WS_HEARTBEAT_TIMEOUT = 90000;

  /** Time allowed between connecting and a successful `auth` message (spec 3.2: 30 s). */
  @NumberFromEnv()
  @IsInt()
  @Min(10)
  MCP_WS_AUTH_TIMEOUT = 30000;

  @NumberFromEnv()
  @IsInt()
  @Min(1)
  MCP_WS_MAX_CONNECTIONS = 1;

  // --- MCP Streamable HTTP ---
  /** MCP Streamable HTTP sessions this instance holds at once; past it an `initialize` is answered 503. */
  @NumberFromEnv()
  @IsInt()
  @Min(1)
  MCP_HTTP_MAX_SESSIONS = 1000;

  /**
   * MCP Streamable HTTP sessions one token may hold (across instances with REDIS_URL); past it
   * an `initialize` is answered 429. 0: no limit.
   */
  @NumberFromEnv()
  @IsInt()
  @Min(0)
  MCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL = 100;

  // --- client tools (spec 8.4) ---
  @BooleanFromEnv()
  @IsBoolean()
  CLIENT_TOOLS_ENABLED = true;

  @NumberFromEnv()
  @IsInt()
  @Min(1)
  CLIENT_TOOLS_MAX_COUNT = 32;

  @NumberFromEnv()
  @IsNumber()
  @Min(0.01)
  CLIENT_TOOL_TIMEOUT = 30;

  @NumberFromEnv()
  @IsInt()
  @Min(1)
  CLIENT_TOOL_RESULT_QUEUE_SIZE = 10;

  // --- web console ---
  /** Serves the web test console at `/` and `/console`; `false` turns it into a 404 (production). */
  @BooleanFromEnv()
  @IsBoolean()
  CONSOLE_ENABLED = true;

  // --- operations ---
  /** Port of a separate listener for `/metrics` (then no longer on `CLOUD_PORT`); 0 keeps it on `CLOUD_PORT`. */
  @NumberFromEnv()
  @IsInt()
  @Min(0)
  @Max(65535)
  METRICS_PORT = 0;

  /** Interface the `METRICS_PORT` listener binds to; loopback, since it asks for no token. */
  @IsString()
  @MinLength(1)
  METRICS_HOST = '127.0.0.1';

  /**
   * Comma-separated readiness checks that do not count (`model`, `redis`, `mcp_upstreams`): a
   * gateway that serves only MCP tools has no use for a model server.
   */
  @IsString()
  @Matches(/^\s*((model|redis|mcp_upstreams)\s*(,\s*(model|redis|mcp_upstreams)\s*)*)?$/, {
    message: 'READINESS_IGNORE must be a comma-separated list of: model, redis, mcp_upstreams',
  })
  READINESS_IGNORE = '';
  // --- audit log ---
  /** One `Audit` log line per tool call and per LLM turn (at INFO); `false` turns them off. */
  @BooleanFromEnv()
  @IsBoolean()
  AUDIT_LOG = true;

  /** Whether audit lines carry the arguments and results (clipped); they may hold personal data. */
  @BooleanFromEnv()
  @IsBoolean()
  AUDIT_LOG_ARGUMENTS = false;

  // --- OpenTelemetry traces (the standard OTEL_* names); off unless an endpoint is set ---
  /** The OTLP/HTTP collector's base URL; traces go to `<url>/v1/traces`. */
  @IsOptional()
  @IsUrl({ require_tld: false, require_protocol: true, protocols: ['http', 'https'] }, { message: 'OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL' })
  OTEL_EXPORTER_OTLP_ENDPOINT?: string;

  /** The full URL traces are posted to, over OTEL_EXPORTER_OTLP_ENDPOINT. */
  @IsOptional()
  @IsUrl(
    { require_tld: false, require_protocol: true, protocols: ['http', 'https'] },
    { message: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be an http(s) URL' },
  )
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string;

  /** OTLP over HTTP with protobuf bodies (the standard's default) or JSON bodies; gRPC is not offered. */
  @Transform(({ value }) => String(value).trim().toLowerCase())
  @IsIn(['http/protobuf', 'http/json'], { message: 'OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json' })
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' | 'http/json' = 'http/protobuf';

  /** `service.name` of every span. */
  @IsString()
  @MinLength(1)
  OTEL_SERVICE_NAME = 'voice-tool-gateway';
}

/** Names of every variable the gateway reads, in declaration order. */
export const ENVIRONMENT_VARIABLE_NAMES: readonly (keyof EnvironmentVariables)[] = Object.keys(
  new EnvironmentVariables(),
) as (keyof EnvironmentVariables)[];

/** A value a caller may pass for a variable: the env's string, or an already typed value. */
export type EnvironmentInput = Partial<Record<keyof EnvironmentVariables, string | number | boolean | undefined>>;

/** Thrown at boot when a variable is invalid; the message names each bad variable. */
export class InvalidConfigurationError extends StartupError {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`);
  }
}

const TYPE_CONSTRAINTS = ['isInt', 'isNumber', 'isBoolean', 'isString', 'isUrl', 'isIn'];

/**
 * Validates raw settings (process.env plus any overrides) into {@link EnvironmentVariables}.
 * Unknown keys are ignored, empty strings mean "unset" so that `LLM_API_KEY=` keeps the default.
 */
export function validateEnvironment(raw: Record<string, unknown>): EnvironmentVariables {
  const known: Record<string, unknown> = {};
  for (const name of ENVIRONMENT_VARIABLE_NAMES) {
    const value = raw[name];
    if (value !== undefined && value !== null && value !== '') known[name] = value;
  }
  const env = plainToInstance(EnvironmentVariables, known);
  const errors = validateSync(env, { skipMissingProperties: false, forbidUnknownValues: false });
  if (errors.length > 0) {
    throw new InvalidConfigurationError(
      errors.map((error) => {
        const constraints = error.constraints ?? {};
        // "abc" for a port breaks the range checks too; the type is what the user needs to hear.
        const typeCheck = TYPE_CONSTRAINTS.find((name) => constraints[name] !== undefined);
        const messages = typeCheck ? constraints[typeCheck] : Object.values(constraints).join('; ');
        return `${messages} (got ${JSON.stringify(known[error.property])})`;
      }),
    );
  }
  return env;
}
