import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import { plainToInstance, Transform } from 'class-transformer';
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
import { isLoopbackHost } from '../shared/loopback';
import { StartupError } from '../shared/startup-error';
import { BooleanFromEnv, IsTimeZone, JsonObjectFromEnv, NumberFromEnv, Setting } from './setting';

/** Log levels in the spec's Python spelling, plus Nest's own names. */
export const LOG_LEVELS = ['DEBUG', 'VERBOSE', 'INFO', 'LOG', 'WARNING', 'WARN', 'ERROR', 'CRITICAL', 'FATAL'] as const;
export type LogLevelName = (typeof LOG_LEVELS)[number];

/** The MCP-over-WebSocket spec's example token, refused unless `MCP_WS_ALLOW_DEFAULT_TOKEN` is set. */
export const MCP_PLACEHOLDER_TOKEN = 'ChangeMe!';

const HTTP_URL = { require_tld: false, require_protocol: true, protocols: ['http', 'https'] };

/**
 * Every environment variable the gateway reads, with the specs' names and defaults: the one
 * definition of a setting. Each has its validation, its {@link Setting} description (from which
 * docs/configuration.md and .env.example are generated), and its default as initial value.
 * Validated once at boot by {@link validateEnvironment}; the rest of the code reads the typed
 * `GatewayConfig`. Units follow the specs: seconds, except milliseconds for the `MCP_WS_*` timings.
 */
export class EnvironmentVariables {
  @Setting({
    group: 'server',
    unset: '`127.0.0.1` without tokens, `0.0.0.0` with them',
    about:
      "Address the HTTP server carrying every protocol listens on. Unset: every interface once tokens are configured (`AUTH_TOKENS` or `AUTH_TOKENS_FILE`), loopback while they are not, so an open gateway is never reachable by accident (the spec's default is 0.0.0.0 either way). Beyond loopback without tokens the gateway refuses to start unless `ALLOW_UNAUTHENTICATED=true`.",
  })
  @IsOptional()
  @IsString()
  @MinLength(1)
  CLOUD_HOST?: string;

  @Setting({ group: 'server', about: 'Port of the HTTP server carrying every protocol; 0 takes a free one.' })
  @NumberFromEnv()
  @IsInt()
  @Min(0)
  @Max(65535)
  CLOUD_PORT = 9400;

  @Setting({ group: 'server', unit: 'bytes', about: 'Largest WebSocket frame or HTTP body accepted (spec 12.1: 1 MB).' })
  @NumberFromEnv()
  @IsInt()
  @Min(1024)
  CLOUD_MAX_MESSAGE_SIZE = 1048576;

  @Setting({
    group: 'server',
    unit: 'seconds',
    about: "Seconds a new connection gets to send its first request's headers (a WebSocket upgrade included); then it is dropped.",
  })
  @NumberFromEnv()
  @IsNumber()
  @Min(0.1)
  HTTP_HEADERS_TIMEOUT = 10;

  @Setting({
    group: 'server',
    about: "Connections still sending their first request's headers, on each listener; past it a new connection is dropped at once.",
  })
  @NumberFromEnv()
  @IsInt()
  @Min(1)
  HTTP_MAX_INCOMPLETE_REQUESTS = 1000;

  @Setting({
    group: 'server',
    unit: 'seconds',
    about: 'On SIGTERM, seconds the tool calls and turns in flight, on every protocol, get to finish before sockets are closed (1001).',
  })
  @NumberFromEnv()
  @IsNumber()
  @Min(0)
  SHUTDOWN_DRAIN_TIMEOUT = 10;

  @Setting({
    group: 'auth',
    about:
      'Comma-separated bearer tokens accepted on every protocol. Empty leaves the shared routes open (MCP excepted, which is never open; see `MCP_WS_AUTH_TOKEN`).',
  })
  @IsString()
  AUTH_TOKENS = '';

  @Setting({
    group: 'auth',
    about:
      'Let the gateway listen beyond loopback with no tokens: anyone who reaches it may use the model and every tool. Without it, such a start is refused.',
  })
  @BooleanFromEnv()
  @IsBoolean()
  ALLOW_UNAUTHENTICATED = false;

  @Setting({
    group: 'auth',
    unset: 'none',
    about:
      'YAML or JSON file of named tokens with their tools, protocols, `llm` access, rate limits, connection caps and budgets; reloaded when it changes. Keep it `chmod 600`.',
  })
  @IsOptional()
  @IsString()
  AUTH_TOKENS_FILE?: string;

  @Setting({
    group: 'auth',
    about:
      "Comma-separated issuer URLs of OpenID Connect / OAuth 2.1 authorization servers whose JWT access tokens are accepted on every protocol, beside the static tokens. Each issuer's metadata is discovered (`/.well-known/openid-configuration`, else RFC 8414 `/.well-known/oauth-authorization-server`) and its keys are fetched from its `jwks_uri`. Empty: no JWT is accepted.",
  })
  @IsString()
  @Matches(/^\s*((https?:\/\/[^\s,]+\s*)(,\s*https?:\/\/[^\s,]+\s*)*)?\s*$/i, {
    message: 'OIDC_ISSUERS must be comma-separated http(s) issuer URLs such as https://login.example.com/realms/main',
  })
  OIDC_ISSUERS = '';

  @Setting({
    group: 'auth',
    unset: '`PUBLIC_URL` and `PUBLIC_URL` + `/mcp`',
    about:
      'Comma-separated audiences a JWT access token must carry one of (`aud`, RFC 8707 resource indicators): a token minted for another service is refused.',
  })
  @IsOptional()
  @IsString()
  OIDC_AUDIENCE?: string;

  @Setting({
    group: 'auth',
    unset: 'none (then `OIDC_AUDIENCE` must be set when `OIDC_ISSUERS` is)',
    about:
      "The URL clients reach this gateway at (`https://gateway.example.com`): the resource of its OAuth protected resource metadata, the default audience of JWT access tokens, and the base of the WebSocket URL a xiaozhi device's configuration answer gives it (unset: the request's `Host`).",
  })
  @IsOptional()
  @IsUrl(HTTP_URL)
  PUBLIC_URL?: string;

  @Setting({
    group: 'auth',
    about: 'Comma-separated JWS algorithms a JWT access token may be signed with; asymmetric ones only (`none` and HMAC are refused).',
  })
  @IsString()
  @Matches(
    /^\s*(RS256|RS384|RS512|PS256|PS384|PS512|ES256|ES384|ES512|EdDSA|Ed25519)(\s*,\s*(RS256|RS384|RS512|PS256|PS384|PS512|ES256|ES384|ES512|EdDSA|Ed25519))*\s*$/,
    {
      message: 'OIDC_ALGORITHMS must be comma-separated asymmetric JWS algorithms (RS256, PS256, ES256, EdDSA...): none and HS256 are never accepted',
    },
  )
  OIDC_ALGORITHMS = 'RS256,ES256,PS256,EdDSA';

  @Setting({ group: 'auth', unit: 'seconds', about: 'Clock skew tolerated when checking the `exp` and `nbf` of a JWT access token.' })
  @NumberFromEnv()
  @IsNumber()
  @Min(0)
  OIDC_CLOCK_SKEW = 30;

  @Setting({
    group: 'auth',
    unit: 'seconds',
    about: "Longest wait for an issuer's metadata or keys; a token whose keys cannot be had in time is refused (401), and other clients never wait for it.",
  })
  @NumberFromEnv()
  @IsNumber()
  @Min(0.1)
  OIDC_FETCH_TIMEOUT = 5;

  @Setting({
    group: 'auth',
    unit: 'seconds',
    about:
      "Least time between two fetches of an issuer's keys that a token signed with an unknown key (`kid`) can cause: a rotation at the issuer is picked up at the first token of the new key, a flood of made-up key ids costs one fetch per period.",
  })
  @NumberFromEnv()
  @IsNumber()
  @Min(0)
  OIDC_JWKS_COOLDOWN = 30;

  @Setting({
    group: 'auth',
    about:
      "Comma-separated scopes listed as `scopes_supported` in the protected resource metadata (`/.well-known/oauth-protected-resource`); the scopes of the tokens file's `oidc` rules are added to them.",
  })
  @IsString()
  OIDC_SCOPES = '';

  @Setting({
    group: 'auth',
    unset: 'none: opaque tokens are unknown tokens',
    about:
      "The authorization server's RFC 7662 introspection endpoint: a bearer token that is neither a static token nor a JWT is asked about there (`OIDC_INTROSPECTION_CLIENT_ID` and `_SECRET` authenticate the gateway), accepted while active and for this gateway's audience, and the answer kept at most a minute, never past the token's `exp`.",
  })
  @IsOptional()
  @IsUrl(HTTP_URL)
  OIDC_INTROSPECTION_URL?: string;

  @Setting({ group: 'auth', unset: 'none', about: 'The client id the gateway introspects tokens as (HTTP Basic, `client_secret_basic`).' })
  @IsOptional()
  @IsString()
  OIDC_INTROSPECTION_CLIENT_ID?: string;

  @Setting({ group: 'auth', unset: 'none', about: "That client's secret." })
  @IsOptional()
  @IsString()
  OIDC_INTROSPECTION_CLIENT_SECRET?: string;

  @Setting({
    group: 'auth',
    unit: 'seconds',
    about: "Seconds of the tokens file's rate-limit window (`turns_per_minute`, `tool_calls_per_minute`); 60 unless a test or a burst policy wants otherwise.",
  })
  @NumberFromEnv()
  @IsNumber()
  @Min(0.1)
  RATE_LIMIT_WINDOW = 60;

  @Setting({
    group: 'auth',
    about:
      'Comma-separated origins (`https://console.example.com`) whose browser pages may use the gateway besides its own pages (and localhost pages when it listens on loopback); `*` allows any site.',
  })
  @IsString()
  @Matches(/^\s*(\*|(https?:\/\/[^\s,/]+\s*)(,\s*https?:\/\/[^\s,/]+\s*)*)?\s*$/i, {
    message: 'ALLOWED_ORIGINS must be "*" or comma-separated origins such as https://console.example.com',
  })
  ALLOWED_ORIGINS = '';

  @Setting({
    group: 'auth',
    about:
      "Comma-separated host names (a reverse proxy's public name) the `Host` header may carry when the gateway listens on loopback, besides localhost names: DNS rebinding protection.",
  })
  @IsString()
  ALLOWED_HOSTS = '';

  @Setting({
    group: 'llm',
    about: "Base URL of the OpenAI-compatible model server (vLLM, Ollama's `/v1/`, OpenAI). Credentials in it are shown as `***` in logs and errors.",
  })
  @IsUrl(HTTP_URL)
  LLM_BASE_URL = 'http://127.0.0.1:8000/v1/';

  @Setting({ group: 'llm', about: 'Model name sent with every model request.' })
  @IsString()
  @MinLength(1)
  LLM_MODEL = 'Qwen3-30B-A3B';

  @Setting({ group: 'llm', unset: 'none', about: 'Sent as the bearer token to the model server; unset for servers that need none (vLLM, Ollama).' })
  @IsOptional()
  @IsString()
  LLM_API_KEY?: string;

  @Setting({ group: 'llm', unit: 'seconds', about: 'Seconds one model call may take, its stream included, before it is abandoned with `TIMEOUT`.' })
  @NumberFromEnv()
  @IsNumber()
  @Min(0.01)
  LLM_TIMEOUT = 120;

  @Setting({ group: 'llm', about: "Sampling temperature of a new session's model calls (a client may change it)." })
  @NumberFromEnv()
  @IsNumber()
  @Min(0)
  @Max(1)
  LLM_TEMPERATURE = 0.7;

  @Setting({ group: 'llm', about: "Most tokens of one answer, for a new session's model calls (a client may change it)." })
  @NumberFromEnv()
  @IsInt()
  @Min(1)
  LLM_MAX_TOKENS = 2048;

  @Setting({ group: 'llm', about: 'Whether a new session sends its history to the model, unless a client says otherwise.' })
  @BooleanFromEnv()
  @IsBoolean()
  LLM_ENABLE_CONTEXT = false;

  @Setting({ group: 'llm', about: 'Retries of a failed model request (connection errors, 429, 5xx) before `LLM_ERROR`.' })
  @NumberFromEnv()
  @IsInt()
  @Min(0)
  LLM_MAX_RETRIES = 1;

  @Setting({ group: 'llm', about: 'Most model calls in one turn; the last is made without tools so the model must answer.' })
  @NumberFromEnv()
  @IsInt()
  @Min(1)
  LLM_MAX_TOOL_ROUNDS = 5;

  @Setting({
    group: 'llm',
    unit: 'characters',
    about: 'Characters of one tool result the model reads; a longer one is cut, with a note saying so and how long it was.',
  })
  @NumberFromEnv()
  @IsInt()
  @Min(256)
  LLM_MAX_TOOL_RESULT_CHARS = 16_000;

  @Setting({
    group: 'llm',
    unit: 'characters',
    about:
      "Characters of a server tool's result a `tool_call` frame echoes to the device; a longer one is sent as a preview this long, with `result_truncated` and its length.",
  })
  @NumberFromEnv()
  @IsInt()
  @Min(0)
  LLM_TOOL_CALL_ECHO_CHARS = 1000;

  @Setting({
    group: 'llm',
    unset: "the spec's prompt",
    about: "Replaces the spec's system prompt (14.1); `{current_time}` is filled in. Set this or `LLM_SYSTEM_PROMPT_FILE`, not both.",
  })
  @IsOptional()
  @IsString()
  LLM_SYSTEM_PROMPT?: string;

  @Setting({ group: 'llm', unset: 'none', about: 'A file holding the system prompt, for prompts too long for a variable; read at start.' })
  @IsOptional()
  @IsString()
  LLM_SYSTEM_PROMPT_FILE?: string;

  @Setting({
    group: 'llm',
    unset: 'none',
    about:
      'JSON object merged into every model request, for the server\'s own options the OpenAI API has no field for: for Qwen3 on vLLM, `{"chat_template_kwargs":{"enable_thinking":false}}` skips the thinking (a faster first sentence). It may replace what the gateway sends: `{"stream_options":{"include_usage":false}}` for a server that refuses the usage budgets read (tokens are then estimated).',
  })
  @IsOptional()
  @JsonObjectFromEnv()
  @IsObject({ message: 'LLM_EXTRA_BODY must be a JSON object, such as {"chat_template_kwargs":{"enable_thinking":false}}' })
  LLM_EXTRA_BODY?: Record<string, unknown>;

  @Setting({
    group: 'llm',
    about: "Whether LLM-gateway connections stream each sentence as it is ready, until a client's `configure {stream}` says otherwise.",
  })
  @BooleanFromEnv()
  @IsBoolean()
  LLM_STREAM_DEFAULT = false;

  @Setting({
    group: 'llm',
    unit: 'seconds',
    about: "Seconds a streaming turn's tool round may run before one short filler sentence is spoken; 0 never.",
  })
  @NumberFromEnv()
  @IsNumber()
  @Min(0)
  TOOL_FILLER_DELAY = 1.5;

  @Setting({
    group: 'speech',
    unset: 'off: no speech recognition, audio from a device is refused',
    about:
      "Base URL of the OpenAI-compatible speech recognition server (speaches, OpenAI's `https://api.openai.com/v1/`). Credentials in it are shown as `***` in logs.",
  })
  @IsOptional()
  @IsUrl(HTTP_URL)
  STT_BASE_URL?: string;

  @Setting({
    group: 'speech',
    about: 'Model name sent with every transcription request (for speaches, a Whisper model id such as `Systran/faster-whisper-small`).',
  })
  @IsString()
  @MinLength(1)
  STT_MODEL = 'whisper-1';

  @Setting({
    group: 'speech',
    unset: 'the engine detects the language',
    about: 'Language of what users say, as an ISO-639-1 code (`en`, `fr`); sent with every transcription request.',
  })
  @IsOptional()
  @Matches(/^[a-z]{2,3}$/, { message: 'STT_LANGUAGE must be an ISO-639-1 code such as en or fr, or empty to let the engine detect it' })
  STT_LANGUAGE?: string;

  @Setting({ group: 'speech', unset: 'none', about: 'Sent as the bearer token to the speech recognition server; unset for servers that need none.' })
  @IsOptional()
  @IsString()
  STT_API_KEY?: string;

  @Setting({ group: 'speech', unit: 'seconds', about: 'Seconds one transcription may take, upload and answer, before it is abandoned.' })
  @NumberFromEnv()
  @IsNumber()
  @Min(0.01)
  STT_TIMEOUT = 15;

  @Setting({
    group: 'speech',
    unset: 'off: no speech synthesis, answers cannot be spoken to a device',
    about:
      "Base URL of the OpenAI-compatible speech synthesis server (speaches, Kokoro-FastAPI, OpenAI's `https://api.openai.com/v1/`). Credentials in it are shown as `***` in logs.",
  })
  @IsOptional()
  @IsUrl(HTTP_URL)
  TTS_BASE_URL?: string;

  @Setting({ group: 'speech', about: 'Model name sent with every speech request (`tts-1` at OpenAI, `kokoro` at Kokoro-FastAPI).' })
  @IsString()
  @MinLength(1)
  TTS_MODEL = 'tts-1';

  @Setting({ group: 'speech', about: 'Voice sent with every speech request, as the server names it (`alloy` at OpenAI, `af_heart` for Kokoro).' })
  @IsString()
  @MinLength(1)
  TTS_VOICE = 'alloy';

  @Setting({
    group: 'speech',
    about: 'Audio format asked of the synthesis server: `pcm` (raw 16-bit mono at `TTS_SAMPLE_RATE`) or `wav` (16-bit mono, its rate in its header).',
  })
  @IsIn(['pcm', 'wav'], { message: 'TTS_FORMAT must be pcm or wav' })
  TTS_FORMAT: 'pcm' | 'wav' = 'pcm';

  @Setting({ group: 'speech', about: "Sample rate, in Hz, of the server's `pcm` answers (OpenAI's and Kokoro's are 24000); unused for `wav`." })
  @NumberFromEnv()
  @IsInt()
  @Min(8000)
  @Max(48000)
  TTS_SAMPLE_RATE = 24000;

  @Setting({ group: 'speech', unset: 'none', about: 'Sent as the bearer token to the speech synthesis server; unset for servers that need none.' })
  @IsOptional()
  @IsString()
  TTS_API_KEY?: string;

  @Setting({
    group: 'speech',
    unit: 'seconds',
    about: 'Seconds the synthesis server may stay silent, before its first audio or between two pieces of it, before the speech is abandoned.',
  })
  @NumberFromEnv()
  @IsNumber()
  @Min(0.01)
  TTS_TIMEOUT = 10;

  @Setting({ group: 'speech', unset: "the server's (1.0)", about: "Speed of the spoken answer, from 0.25 to 4.0 (OpenAI's `speed`)." })
  @IsOptional()
  @NumberFromEnv()
  @IsNumber()
  @Min(0.25)
  @Max(4)
  TTS_SPEED?: number;

  @Setting({
    group: 'tools',
    unit: 'seconds',
    about: 'Time limit of a server tool call (spec 7.7: 10 s); of an upstream MCP tool call too, unless `MCP_UPSTREAM_CALL_TIMEOUT` is set.',
  })
  @NumberFromEnv()
  @IsNumber()
  @Min(0.01)
  SERVER_TOOL_TIMEOUT = 10;

  @Setting({
    group: 'tools',
    unset: "the machine's zone",
    about: "IANA time zone used when a caller gives none (`get_current_time`, the system prompt's time).",
  })
  @IsOptional()
  @IsString()
  @IsTimeZone('DEFAULT_TIMEZONE must be an IANA time zone such as Europe/Paris')
  DEFAULT_TIMEZONE?: string;

  @Setting({ group: 'tools', about: "Open-Meteo's geocoding API (keyless), for `get_weather`." })
  @IsUrl(HTTP_URL)
  WEATHER_GEOCODING_URL = 'https://geocoding-api.open-meteo.com/v1/search';

  @Setting({ group: 'tools', about: "Open-Meteo's forecast API (keyless), for `get_weather`." })
  @IsUrl(HTTP_URL)
  WEATHER_FORECAST_URL = 'https://api.open-meteo.com/v1/forecast';

  @Setting({ group: 'tools', unset: 'unknown', about: 'City the assistant is in, for `get_location` and `get_weather` without a city.' })
  @IsOptional()
  @IsString()
  LOCATION_CITY?: string;

  @Setting({ group: 'tools', unset: 'unknown', about: 'Country of `LOCATION_CITY`.' })
  @IsOptional()
  @IsString()
  LOCATION_COUNTRY?: string;

  @Setting({ group: 'tools', unset: 'unknown', about: "Latitude of the assistant's place, in degrees (with `LOCATION_LONGITUDE`, instead of a city)." })
  @NumberFromEnv()
  @IsOptional()
  @IsNumber()
  @Min(-90)
  @Max(90)
  LOCATION_LATITUDE?: number;

  @Setting({ group: 'tools', unset: 'unknown', about: "Longitude of the assistant's place, in degrees." })
  @NumberFromEnv()
  @IsOptional()
  @IsNumber()
  @Min(-180)
  @Max(180)
  LOCATION_LONGITUDE?: number;

  @Setting({
    group: 'tools',
    about: 'IP geolocation service asked when `LOCATION_CITY` and the coordinates are unset (ipwho.is or ip-api.com JSON); set it to `off` to ask none.',
  })
  @ValidateIf((env: EnvironmentVariables) => env.LOCATION_PROVIDER_URL !== 'off')
  @IsUrl(HTTP_URL, { message: 'LOCATION_PROVIDER_URL must be an http(s) URL or "off"' })
  LOCATION_PROVIDER_URL = 'https://ipwho.is/';

  @Setting({
    group: 'tools',
    unset: 'the shipped `data/characters.json`',
    about: 'The role-play characters (JSON); edits apply without a restart.',
  })
  @IsOptional()
  @IsString()
  ROLEPLAY_CHARACTERS_FILE?: string;

  @Setting({ group: 'clientTools', about: 'Whether LLM-gateway connections may register tools of their own (device tools).' })
  @BooleanFromEnv()
  @IsBoolean()
  CLIENT_TOOLS_ENABLED = true;

  @Setting({ group: 'clientTools', about: 'Most tools one connection may register.' })
  @NumberFromEnv()
  @IsInt()
  @Min(1)
  CLIENT_TOOLS_MAX_COUNT = 32;

  @Setting({ group: 'clientTools', unit: 'seconds', about: 'Seconds to wait for a `tool_result` before `TOOL_RESULT_TIMEOUT`.' })
  @NumberFromEnv()
  @IsNumber()
  @Min(0.01)
  CLIENT_TOOL_TIMEOUT = 30;

  @Setting({ group: 'clientTools', about: 'Calls of device tools one connection may have waiting for their result at once.' })
  @NumberFromEnv()
  @IsInt()
  @Min(1)
  CLIENT_TOOL_RESULT_QUEUE_SIZE = 10;

  @Setting({ group: 'fleet', about: 'Longest characters of text one push (`say`, a pushed turn, a reminder) may carry.' })
  @NumberFromEnv()
  @IsInt()
  @Min(1)
  @Max(100_000)
  FLEET_PUSH_MAX_CHARS = 2000;

  @Setting({ group: 'fleet', about: 'Most devices one fan-out (`POST /devices/say`) may name, ids and the devices its globs match together.' })
  @NumberFromEnv()
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  FLEET_PUSH_MAX_DEVICES = 10_000;

  @Setting({
    group: 'fleet',
    about: 'Pushes held for one offline device (`hold_s`), delivered in order at its next connection; one more is refused with `DEVICE_BUSY`.',
  })
  @NumberFromEnv()
  @IsInt()
  @Min(0)
  @Max(1000)
  FLEET_HOLD_MAX_COUNT = 16;

  @Setting({
    group: 'fleet',
    unit: 'seconds',
    about: 'Longest `hold_s` a push may ask for; held pushes are kept in Redis with `REDIS_URL`, in memory otherwise.',
  })
  @NumberFromEnv()
  @IsInt()
  @Min(0)
  FLEET_HOLD_MAX_S = 86_400;

  @Setting({
    group: 'fleet',
    about:
      'Pushes one token may have held at once, over every device (reminders count for the token that set them); one more is refused with `RATE_LIMITED`, so one token cannot fill what others need.',
  })
  @NumberFromEnv()
  @IsInt()
  @Min(0)
  FLEET_HOLD_MAX_PER_PRINCIPAL = 1000;

  @Setting({
    group: 'fleet',
    unit: 'seconds',
    about:
      "How long a device id stays its owner's after its last connection ended, once nothing is held or pending for it; until then another token connecting as it is refused (409). The owner can release it sooner (`POST /devices/<id>/release`).",
  })
  @NumberFromEnv()
  @IsInt()
  @Min(1)
  FLEET_OWNERSHIP_LAPSE_S = 2_592_000;

  @Setting({
    group: 'fleet',
    unit: 'seconds',
    about:
      'How long a due reminder waits for its offline device, spoken at its next connection; never spoken more than this (or a minute) after it fell due. 0: an offline device misses it. Capped at `FLEET_HOLD_MAX_S`.',
  })
  @NumberFromEnv()
  @IsInt()
  @Min(0)
  FLEET_REMINDER_HOLD_S = 3600;

  @Setting({ group: 'fleet', about: 'Pending reminders one device may have, whoever set them; `set_reminder` past it is refused.' })
  @NumberFromEnv()
  @IsInt()
  @Min(1)
  FLEET_REMINDERS_MAX_PER_DEVICE = 50;

  @Setting({
    group: 'fleet',
    about: 'Pending reminders one token may have set over all devices (with auth off, all callers together); `set_reminder` past it is refused.',
  })
  @NumberFromEnv()
  @IsInt()
  @Min(1)
  FLEET_REMINDERS_MAX_PER_PRINCIPAL = 500;

  @Setting({ group: 'fleet', unit: 'seconds', about: 'How far ahead a reminder may be set (366 days).' })
  @NumberFromEnv()
  @IsInt()
  @Min(60)
  FLEET_REMINDER_MAX_AHEAD_S = 31_622_400;

  @Setting({
    group: 'fleet',
    unit: 'seconds',
    about: 'How long the delivery receipt of a push (`GET /pushes/<id>`) is kept after the push was made; in Redis with `REDIS_URL`, in memory otherwise.',
  })
  @NumberFromEnv()
  @IsInt()
  @Min(60)
  PUSH_RECEIPTS_TTL_S = 86_400;

  @Setting({ group: 'fleet', about: 'Delivery receipts kept at most (over every device and principal); past it the oldest are forgotten first.' })
  @NumberFromEnv()
  @IsInt()
  @Min(100)
  PUSH_RECEIPTS_MAX = 100_000;

  @Setting({
    group: 'fleet',
    unset: 'off: receipts are only queried',
    about:
      'URL each change of a push receipt is POSTed to as JSON (`{"event": "push.state", "id", "state", "at", "reason"?, "receipt"}`), from the instance where it changed; never delays a push. Never logged (it may carry a secret).',
  })
  @IsOptional()
  @IsUrl(HTTP_URL)
  PUSH_WEBHOOK_URL?: string;

  @Setting({ group: 'fleet', unit: 'seconds', about: 'Longest wait for one webhook POST to be answered; past it the attempt failed.' })
  @NumberFromEnv()
  @IsNumber()
  @Min(0.01)
  PUSH_WEBHOOK_TIMEOUT = 5;

  @Setting({
    group: 'fleet',
    about: 'Attempts after the first when a webhook POST fails (a network error, a timeout, a status other than 2xx); then the change is given up and logged.',
  })
  @NumberFromEnv()
  @IsInt()
  @Min(0)
  @Max(10)
  PUSH_WEBHOOK_RETRIES = 3;

  @Setting({ group: 'fleet', unit: 'seconds', about: 'Wait before the first webhook retry; each next retry waits twice as long.' })
  @NumberFromEnv()
  @IsNumber()
  @Min(0.01)
  PUSH_WEBHOOK_RETRY_DELAY = 1;

  @Setting({
    group: 'fleet',
    about: 'Receipt changes one instance keeps waiting for the webhook at most; one more is dropped, counted and logged (the first, then every thousandth).',
  })
  @NumberFromEnv()
  @IsInt()
  @Min(1)
  PUSH_WEBHOOK_QUEUE_MAX = 10_000;

  @Setting({ group: 'mcp', about: 'Every MCP route (`false`: 404), and the upstream MCP servers (`false`: not connected).' })
  @BooleanFromEnv()
  @IsBoolean()
  MCP_ENABLED = true;

  @Setting({ group: 'mcp', about: 'Name announced as an MCP server.' })
  @IsString()
  @MinLength(1)
  MCP_SERVER_NAME = 'arcs-mini-mcp-server';

  @Setting({
    group: 'mcp',
    about:
      'Protocol version answered to a client asking for one the SDK does not know (a known one is echoed); must be one the SDK speaks (checked while `MCP_ENABLED`).',
  })
  @ValidateIf((env: EnvironmentVariables) => env.MCP_ENABLED !== false)
  @IsIn(SUPPORTED_PROTOCOL_VERSIONS, { message: `MCP_PROTOCOL_VERSION must be one of ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}` })
  MCP_PROTOCOL_VERSION = '2024-11-05';

  @Setting({
    group: 'mcpWebSocket',
    unset: 'generated',
    about:
      'Token of every MCP route (the tokens of `AUTH_TOKENS` and `AUTH_TOKENS_FILE` are accepted too); it opens MCP only. With none of them set, a random token is generated at start and shown once on stderr, whatever `CLOUD_LOG_LEVEL` says: MCP is never open.',
  })
  @IsOptional()
  @IsString()
  MCP_WS_AUTH_TOKEN?: string;

  @Setting({
    group: 'mcpWebSocket',
    unset: 'none (printed)',
    about: 'Where the MCP token generated for a run is written (readable by its owner only) instead of being printed: for a supervisor that hands it on.',
  })
  @IsOptional()
  @IsString()
  MCP_WS_AUTH_TOKEN_FILE?: string;

  @Setting({ group: 'mcpWebSocket', about: 'The spec\'s placeholder token "ChangeMe!" as `MCP_WS_AUTH_TOKEN` stops the boot unless this is true.' })
  @BooleanFromEnv()
  @IsBoolean()
  MCP_WS_ALLOW_DEFAULT_TOKEN = false;

  @Setting({
    group: 'mcpWebSocket',
    about: 'Interface of the dedicated MCP WebSocket listener, which serves the same gateway at `/` and `/mcp`.',
  })
  @IsString()
  @MinLength(1)
  MCP_WS_HOST = '127.0.0.1';

  @Setting({ group: 'mcpWebSocket', about: 'Port of the dedicated MCP WebSocket listener; 0 turns it off.' })
  @NumberFromEnv()
  @IsInt()
  @Min(0)
  @Max(65535)
  MCP_WS_PORT = 8765;

  @Setting({
    group: 'mcpWebSocket',
    unit: 'milliseconds',
    about: 'How often the server pings an MCP WebSocket client (an envelope `ping`, or a WebSocket ping on a plain socket).',
  })
  @NumberFromEnv()
  @IsInt()
  @Min(10)
  MCP_WS_HEARTBEAT_INTERVAL = 30000;

  @Setting({
    group: 'mcpWebSocket',
    unit: 'milliseconds',
    about: 'How long without a pong ends an MCP WebSocket session (checked at each ping: ended within one interval after).',
  })
  @NumberFromEnv()
  @IsInt()
  @Min(10)
  MCP_WS_HEARTBEAT_TIMEOUT = 90000;

  @Setting({ group: 'mcpWebSocket', unit: 'milliseconds', about: 'Time allowed between connecting and a successful envelope `auth` message (spec 3.2: 30 s).' })
  @NumberFromEnv()
  @IsInt()
  @Min(10)
  MCP_WS_AUTH_TIMEOUT = 30000;

  @Setting({
    group: 'mcpWebSocket',
    about: "Most MCP WebSocket connections at once (envelope and plain, both listeners; the spec's 1); more get 429.",
  })
  @NumberFromEnv()
  @IsInt()
  @Min(1)
  MCP_WS_MAX_CONNECTIONS = 1;

  @Setting({ group: 'mcpHttp', about: 'MCP Streamable HTTP sessions this instance holds at once; an `initialize` past it is answered 503.' })
  @NumberFromEnv()
  @IsInt()
  @Min(1)
  MCP_HTTP_MAX_SESSIONS = 1000;

  @Setting({
    group: 'mcpHttp',
    about:
      'MCP Streamable HTTP sessions one token holds (every instance together with `REDIS_URL`); an `initialize` past it is answered 429. Clients sharing one token share this. 0: no limit.',
  })
  @NumberFromEnv()
  @IsInt()
  @Min(0)
  MCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL = 100;

  @Setting({
    group: 'mcp',
    unit: 'seconds',
    about:
      'Longest an MCP task (a long tool call a client ran as a task) and its result are kept; a client asking for longer, or for no limit, gets this. Kept in Redis with `REDIS_URL`, so any instance answers for it.',
  })
  @NumberFromEnv()
  @Min(1)
  MCP_TASK_TTL = 3600;

  @Setting({
    group: 'mcp',
    about: 'MCP tasks one token may hold at once (every instance together with `REDIS_URL`); a task past it is refused until one expires.',
  })
  @NumberFromEnv()
  @IsInt()
  @Min(1)
  MCP_MAX_TASKS_PER_PRINCIPAL = 100;

  @Setting({
    group: 'mcpUpstream',
    unset: 'none',
    about: 'JSON file in the desktop clients\' format: `{"mcpServers": {"name": {"command", "args", "env"} | {"url", "headers"}}}`.',
  })
  @IsOptional()
  @IsString()
  MCP_SERVERS_FILE?: string;

  @Setting({
    group: 'mcpUpstream',
    unit: 'seconds',
    about: 'Seconds an upstream may take to start and answer `initialize`, and each `tools/list` or ping.',
  })
  @NumberFromEnv()
  @IsNumber()
  @Min(0.01)
  MCP_UPSTREAM_CONNECT_TIMEOUT = 30;

  @Setting({ group: 'mcpUpstream', unit: 'seconds', unset: '`SERVER_TOOL_TIMEOUT`', about: 'Seconds an upstream tool call may take.' })
  @NumberFromEnv()
  @IsOptional()
  @IsNumber()
  @Min(0.01)
  MCP_UPSTREAM_CALL_TIMEOUT?: number;

  @Setting({ group: 'mcpUpstream', unit: 'seconds', about: 'Seconds between liveness pings of a connected upstream; 0 turns them off.' })
  @NumberFromEnv()
  @IsNumber()
  @Min(0)
  MCP_UPSTREAM_PING_INTERVAL = 30;

  @Setting({
    group: 'mcpUpstream',
    unit: 'seconds',
    about: 'Seconds before the first reconnection attempt; doubled (with jitter) per failure up to `MCP_UPSTREAM_RETRY_MAX`.',
  })
  @NumberFromEnv()
  @IsNumber()
  @Min(0.01)
  MCP_UPSTREAM_RETRY_MIN = 1;

  @Setting({ group: 'mcpUpstream', unit: 'seconds', about: 'Longest wait between reconnection attempts; not less than `MCP_UPSTREAM_RETRY_MIN`.' })
  @NumberFromEnv()
  @IsNumber()
  @Min(0.01)
  MCP_UPSTREAM_RETRY_MAX = 60;

  @Setting({
    group: 'mcpUpstream',
    unit: 'bytes',
    about:
      'Bytes one message of an upstream may be (a stdio line, an HTTP body or event line). A larger answer is not held: its call fails naming this setting, and the upstream keeps its tools. Keep it under `WS_MAX_BUFFERED_BYTES`, so WebSocket clients can take a result this size.',
  })
  @NumberFromEnv()
  @IsInt()
  @Min(65536)
  MCP_UPSTREAM_MAX_RESULT_BYTES = 2_097_152;

  @Setting({
    group: 'connections',
    unit: 'seconds',
    about:
      'Seconds between the WebSocket pings the gateway sends a client (the MCP envelope has its own, `MCP_WS_HEARTBEAT_INTERVAL`), and between the keep-alive comments of an event stream over HTTP (MCP Streamable HTTP, UTCP).',
  })
  @NumberFromEnv()
  @IsNumber()
  @Min(0.01)
  CLOUD_PING_INTERVAL = 30;

  @Setting({
    group: 'connections',
    unit: 'seconds',
    about:
      'Seconds a WebSocket client may stay silent (no frame, no pong) before its socket is closed (checked at each ping: closed within one `CLOUD_PING_INTERVAL` after).',
  })
  @NumberFromEnv()
  @IsNumber()
  @Min(0.01)
  CLOUD_PING_TIMEOUT = 300;

  @Setting({ group: 'connections', about: 'LLM-gateway connections at once; more are closed with 1013.' })
  @NumberFromEnv()
  @IsInt()
  @Min(1)
  CLOUD_MAX_CONNECTIONS = 100;

  @Setting({ group: 'connections', about: 'WebSocket connections of every protocol at once; past it an upgrade is refused with 503.' })
  @NumberFromEnv()
  @IsInt()
  @Min(1)
  WS_MAX_CONNECTIONS = 1000;

  @Setting({
    group: 'connections',
    about: 'LiteMCP, UTCP and xiaozhi WebSocket connections, each protocol (the LLM gateway and MCP have their own caps); past it 503.',
  })
  @NumberFromEnv()
  @IsInt()
  @Min(1)
  WS_MAX_CONNECTIONS_PER_PROTOCOL = 200;

  @Setting({ group: 'connections', about: 'WebSocket connections one remote address may hold; past it 429. 0: no limit.' })
  @NumberFromEnv()
  @IsInt()
  @Min(0)
  WS_MAX_CONNECTIONS_PER_ADDRESS = 100;

  @Setting({ group: 'connections', about: 'WebSocket connections one token may hold (not counted while auth is off); past it 429. 0: no limit.' })
  @NumberFromEnv()
  @IsInt()
  @Min(0)
  WS_MAX_CONNECTIONS_PER_PRINCIPAL = 200;

  @Setting({
    group: 'connections',
    about: 'Sockets still to send their auth frame (UTCP, the MCP envelope), all routes together; past it 503.',
  })
  @NumberFromEnv()
  @IsInt()
  @Min(1)
  WS_MAX_UNAUTHENTICATED = 100;

  @Setting({
    group: 'connections',
    unit: 'bytes',
    about:
      'Bytes a socket may send before it has authenticated (the auth frame is small; a JWT fits easily); past it, or at the header of a frame that would go past it, the socket is closed with 1009, then held unread for `WS_AUTH_TIMEOUT` before it is cut. With `WS_MAX_UNAUTHENTICATED`, bounds what clients without a token can make the gateway hold.',
  })
  @NumberFromEnv()
  @IsInt()
  @Min(1024)
  WS_UNAUTHENTICATED_MAX_BYTES = 65536;

  @Setting({
    group: 'connections',
    unit: 'seconds',
    about:
      'Seconds a socket that authenticates by message gets to send its auth frame (UTCP; the MCP envelope has `MCP_WS_AUTH_TIMEOUT`), and at most how long a socket closed for going over `WS_UNAUTHENTICATED_MAX_BYTES` is held, unread, before it is cut.',
  })
  @NumberFromEnv()
  @IsNumber()
  @Min(0.01)
  WS_AUTH_TIMEOUT = 10;

  @Setting({
    group: 'connections',
    unit: 'bytes',
    about:
      'Bytes waiting to be sent to a client that does not read (a WebSocket, or an event stream over HTTP: MCP Streamable HTTP, UTCP); past it the connection is closed (1008) or cut off.',
  })
  @NumberFromEnv()
  @IsInt()
  @Min(65536)
  WS_MAX_BUFFERED_BYTES = 4_194_304;

  @Setting({
    group: 'connections',
    about:
      'Tool calls one WebSocket connection (MCP, LiteMCP, UTCP) or MCP Streamable HTTP session may have running at once; past it a call is refused as rate limited.',
  })
  @NumberFromEnv()
  @IsInt()
  @Min(1)
  WS_MAX_CALLS_IN_FLIGHT = 64;

  @Setting({
    group: 'sessions',
    unit: 'seconds',
    about: 'How long an idle session is kept: LLM-gateway sessions for resuming, MCP Streamable HTTP sessions with no request or stream open.',
  })
  @NumberFromEnv()
  @IsNumber()
  @Min(0.01)
  CLOUD_SESSION_TIMEOUT = 3600;

  @Setting({ group: 'sessions', about: 'Messages of history a session keeps, sent to the model when context is on (spec 6.2: 10).' })
  @NumberFromEnv()
  @IsInt()
  @Min(0)
  CLOUD_SESSION_MAX_HISTORY = 10;

  @Setting({
    group: 'sessions',
    about:
      "LLM-gateway sessions one token keeps (not counted while auth is off); a new one past it removes that token's least recently active session. 0: no limit.",
  })
  @NumberFromEnv()
  @IsInt()
  @Min(0)
  CLOUD_SESSION_MAX_PER_PRINCIPAL = 1000;

  @Setting({ group: 'sessions', unit: 'seconds', about: 'How often expired sessions are removed (spec 6.2: 60 s).' })
  @NumberFromEnv()
  @IsNumber()
  @Min(0.01)
  CLOUD_SESSION_CLEANUP_INTERVAL = 60;

  @Setting({
    group: 'sessions',
    unset: 'sessions in memory',
    about:
      'Redis for sessions (`redis://[:password@]host:port[/db]`), MCP Streamable HTTP sessions included: shared by every instance and kept across restarts.',
  })
  @IsOptional()
  @Matches(/^rediss?:\/\/\S+$/, { message: 'REDIS_URL must be a redis:// or rediss:// URL' })
  REDIS_URL?: string;

  @Setting({ group: 'sessions', about: "Prefix of the gateway's Redis keys and channels, so several deployments can share one Redis." })
  @IsString()
  @MinLength(1)
  REDIS_KEY_PREFIX = 'vtg:';

  @Setting({
    group: 'console',
    about: 'The web test console at `/` and `/console` (chat, device tools, tool catalogue, frame log); `false` turns it into a 404, e.g. in production.',
  })
  @BooleanFromEnv()
  @IsBoolean()
  CONSOLE_ENABLED = true;

  @Setting({
    group: 'console',
    about: 'The OpenAPI description of the HTTP routes at `/openapi.json`, and Swagger UI at `/openapi`; `false` turns both off.',
  })
  @BooleanFromEnv()
  @IsBoolean()
  OPENAPI_ENABLED = true;

  @Setting({ group: 'logging', about: "Least severe level logged, in any case: the spec's names (`DEBUG`, `INFO`, `WARNING`, `ERROR`, `CRITICAL`) or Nest's." })
  @Transform(({ value }) => String(value).trim().toUpperCase())
  @IsIn(LOG_LEVELS)
  CLOUD_LOG_LEVEL: LogLevelName = 'INFO';

  @Setting({ group: 'logging', about: '`json` (one object per line, for collectors) or `text` (for people).' })
  @Transform(({ value }) => String(value).trim().toLowerCase())
  @IsIn(['json', 'text'])
  CLOUD_LOG_FORMAT: 'json' | 'text' = 'json';

  @Setting({
    group: 'operations',
    about:
      'Port of a listener of its own for `/metrics` (Prometheus), which asks for no token there; 0 keeps `/metrics` on `CLOUD_PORT`, behind `AUTH_TOKENS` when set.',
  })
  @NumberFromEnv()
  @IsInt()
  @Min(0)
  @Max(65535)
  METRICS_PORT = 0;

  @Setting({
    group: 'operations',
    about: 'Interface the `METRICS_PORT` listener binds to; keep it on loopback or a private network, since it asks for no token.',
  })
  @IsString()
  @MinLength(1)
  METRICS_HOST = '127.0.0.1';

  @Setting({
    group: 'operations',
    about:
      'Comma-separated checks of `/health/ready` that do not count (`model`, `redis`, `mcp_upstreams`): a gateway that serves only MCP tools has no use for a model server.',
  })
  @IsString()
  @Matches(/^\s*((model|redis|mcp_upstreams)\s*(,\s*(model|redis|mcp_upstreams)\s*)*)?$/, {
    message: 'READINESS_IGNORE must be a comma-separated list of: model, redis, mcp_upstreams',
  })
  READINESS_IGNORE = '';

  @Setting({
    group: 'audit',
    about:
      'One `Audit` line per tool call and per LLM turn, at INFO: token name (or `token#` and 8 hex of its SHA-256), protocol, tool, outcome, duration, turn id. `false` turns them off.',
  })
  @BooleanFromEnv()
  @IsBoolean()
  AUDIT_LOG = true;

  @Setting({
    group: 'audit',
    about:
      'Whether audit lines also carry arguments, results, what the user said and the answer (clipped at 1,024 characters each); they may be personal data.',
  })
  @BooleanFromEnv()
  @IsBoolean()
  AUDIT_LOG_ARGUMENTS = false;

  @Setting({
    group: 'tracing',
    unset: 'no traces',
    about: "The OTLP/HTTP collector's base URL (`http://collector:4318`); spans go to `<endpoint>/v1/traces`.",
  })
  @IsOptional()
  @IsUrl(HTTP_URL, { message: 'OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL' })
  OTEL_EXPORTER_OTLP_ENDPOINT?: string;

  @Setting({ group: 'tracing', unset: "the endpoint's `/v1/traces`", about: 'A full traces URL, used as it is, over `OTEL_EXPORTER_OTLP_ENDPOINT`.' })
  @IsOptional()
  @IsUrl(HTTP_URL, { message: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be an http(s) URL' })
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string;

  @Setting({ group: 'tracing', about: "OTLP over HTTP with protobuf bodies (the standard's default) or JSON bodies; gRPC is not offered." })
  @Transform(({ value }) => String(value).trim().toLowerCase())
  @IsIn(['http/protobuf', 'http/json'], { message: 'OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json' })
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' | 'http/json' = 'http/protobuf';

  @Setting({ group: 'tracing', about: '`service.name` of every span.' })
  @IsString()
  @MinLength(1)
  OTEL_SERVICE_NAME = 'voice-tool-gateway';

  @Setting({ group: 'voice', about: 'Speech probability (0 to 1) at or above which Silero VAD takes a 32 ms window as the start of speech.' })
  @NumberFromEnv()
  @IsNumber()
  @Min(0.01)
  @Max(0.99)
  VAD_THRESHOLD = 0.5;

  @Setting({
    group: 'voice',
    about:
      'Speech probability below which a window counts as silence once speech has started; at most `VAD_THRESHOLD`, so a voice that dips between words is not cut.',
  })
  @NumberFromEnv()
  @IsNumber()
  @Min(0.01)
  @Max(0.99)
  VAD_END_THRESHOLD = 0.35;

  @Setting({ group: 'voice', unit: 'milliseconds', about: 'Speech shorter than this is ignored (a cough, a click).' })
  @NumberFromEnv()
  @IsInt()
  @Min(0)
  VAD_MIN_SPEECH_MS = 250;

  @Setting({
    group: 'voice',
    unit: 'milliseconds',
    about:
      "Silence that ends an utterance: longer than the pauses between words, short enough that the answer is not kept waiting (xiaozhi-esp32-server's default).",
  })
  @NumberFromEnv()
  @IsInt()
  @Min(100)
  VAD_SILENCE_MS = 700;

  @Setting({
    group: 'voice',
    unit: 'seconds',
    about:
      'Longest utterance heard: past it the utterance ends as if the user had stopped, so a stuck button or a running television cannot fill memory or a recognizer upload.',
  })
  @NumberFromEnv()
  @IsInt()
  @Min(1)
  @Max(300)
  VOICE_MAX_UTTERANCE_S = 30;

  @Setting({
    group: 'voice',
    unit: 'milliseconds',
    about: 'Audio kept from before the voice activity detector heard speech begin, so the first sound of the first word reaches the recognizer.',
  })
  @NumberFromEnv()
  @IsInt()
  @Min(0)
  @Max(2000)
  VOICE_PREROLL_MS = 300;

  @Setting({
    group: 'xiaozhi',
    unset: 'none: the answer carries an empty token, and devices can connect only while auth is off',
    about:
      "The token a xiaozhi device's configuration answer gives every device that has no token of its own. The answer is public (the firmware asks before it has any credential), so grant this token little: `protocols: [xiaozhi]`, the device ids you own in `devices`, and the tools devices may use.",
  })
  @IsOptional()
  @IsString()
  @MinLength(1)
  XIAOZHI_DEVICE_TOKEN?: string;

  @Setting({
    group: 'xiaozhi',
    unset: 'no firmware is offered',
    about: 'Firmware version offered to xiaozhi devices: a device running an older version downloads `XIAOZHI_FIRMWARE_URL`.',
  })
  @IsOptional()
  @Matches(/^\d+(\.\d+){0,3}$/, { message: 'XIAOZHI_FIRMWARE_VERSION must be a version such as 1.8.2' })
  XIAOZHI_FIRMWARE_VERSION?: string;

  @Setting({
    group: 'xiaozhi',
    unset: 'no firmware is offered',
    about: 'Where devices download the firmware of `XIAOZHI_FIRMWARE_VERSION` (an http or https URL of the `.bin`).',
  })
  @IsOptional()
  @IsUrl(HTTP_URL)
  XIAOZHI_FIRMWARE_URL?: string;

  @Setting({
    group: 'xiaozhi',
    about: "Sample rate, in Hz, of the Opus audio a xiaozhi device is sent (the server hello's `audio_params`); the firmware resamples it to its speaker's.",
  })
  @NumberFromEnv()
  @IsInt()
  @IsIn([16000, 24000, 48000], { message: 'XIAOZHI_OUTPUT_SAMPLE_RATE must be 16000, 24000 or 48000' })
  XIAOZHI_OUTPUT_SAMPLE_RATE = 24000;

  @Setting({
    group: 'xiaozhi',
    about:
      "Which transport a xiaozhi device's configuration answer tells it to use: `websocket` (its `websocket` section), or `mqtt` (an `mqtt` section with the device's own credentials: MQTT for its messages, encrypted UDP for its audio; needs `XIAOZHI_MQTT_PORT`).",
  })
  @IsIn(['websocket', 'mqtt'], { message: 'XIAOZHI_TRANSPORT must be "websocket" or "mqtt"' })
  XIAOZHI_TRANSPORT: 'websocket' | 'mqtt' = 'websocket';

  @Setting({
    group: 'xiaozhi',
    unset: 'off: no MQTT server, no UDP audio',
    about:
      "Port of the embedded MQTT server xiaozhi devices connect to when their configuration answer says MQTT (its own TCP listener; 0 takes a free one). Devices publish their messages to their own topic and are sent the gateway's without subscribing, as the firmware expects.",
  })
  @IsOptional()
  @NumberFromEnv()
  @IsInt()
  @Min(0)
  @Max(65535)
  XIAOZHI_MQTT_PORT?: number;

  @Setting({ group: 'xiaozhi', unset: 'the address of `CLOUD_HOST`', about: 'Interface the embedded MQTT server and the UDP audio socket listen on.' })
  @IsOptional()
  @IsString()
  @MinLength(1)
  XIAOZHI_MQTT_HOST?: string;

  @Setting({
    group: 'xiaozhi',
    unset: "the host of `PUBLIC_URL` (or of the configuration request) and the MQTT server's port",
    about:
      "The MQTT endpoint (`host:port`) the configuration answer gives devices: the address they reach the MQTT server at, a load balancer's when there is one.",
  })
  @IsOptional()
  @Matches(/^[A-Za-z0-9.:[\]-]+:\d{1,5}$/, { message: 'XIAOZHI_MQTT_PUBLIC_ENDPOINT must be host:port' })
  XIAOZHI_MQTT_PUBLIC_ENDPOINT?: string;

  @Setting({
    group: 'xiaozhi',
    unset: 'derived from `XIAOZHI_DEVICE_TOKEN`',
    about:
      "Secret the MQTT passwords of xiaozhi devices are derived from: each device's password is an HMAC-SHA256 of its id under this secret, so no two devices share one and changing it revokes them all (devices get new ones at their next boot).",
  })
  @IsOptional()
  @IsString()
  @MinLength(16)
  XIAOZHI_MQTT_SECRET?: string;

  @Setting({
    group: 'xiaozhi',
    unset: 'the number of `XIAOZHI_MQTT_PORT`, over UDP',
    about: 'UDP port of the encrypted audio of xiaozhi devices over MQTT (one socket per instance; 0 takes a free one).',
  })
  @IsOptional()
  @NumberFromEnv()
  @IsInt()
  @Min(0)
  @Max(65535)
  XIAOZHI_UDP_PORT?: number;

  @Setting({
    group: 'xiaozhi',
    unset: "the address the device's MQTT connection reached",
    about:
      "Host (an IP address, as the firmware connects to it) the server hello gives devices for their UDP audio: a load balancer's public address when there is one.",
  })
  @IsOptional()
  @IsString()
  @MinLength(1)
  XIAOZHI_UDP_PUBLIC_HOST?: string;

  @Setting({
    group: 'xiaozhi',
    unset: 'the UDP port the socket is bound to',
    about:
      "UDP port the server hello gives devices for their audio. A device's audio session lives on the instance that accepted its MQTT connection, so behind a balancer each instance advertises an address and port of its own that reaches it (with `XIAOZHI_UDP_PUBLIC_HOST`).",
  })
  @IsOptional()
  @NumberFromEnv()
  @IsInt()
  @Min(1)
  @Max(65535)
  XIAOZHI_UDP_PUBLIC_PORT?: number;

  @Setting({
    group: 'xiaozhi',
    about:
      'MQTT connections the embedded MQTT server holds at once, authenticated or not; one more is refused at accept (closed before its CONNECT is read) and counted, so a flood of connections cannot take the memory devices need.',
  })
  @NumberFromEnv()
  @IsInt()
  @Min(1)
  XIAOZHI_MQTT_MAX_CONNECTIONS = 1000;

  @Setting({
    group: 'xiaozhi',
    about:
      'MQTT connections one remote address may hold on the embedded MQTT server; one more is refused at accept. 0: no limit (devices behind one NAT share an address).',
  })
  @NumberFromEnv()
  @IsInt()
  @Min(0)
  XIAOZHI_MQTT_MAX_CONNECTIONS_PER_ADDRESS = 100;

  @Setting({
    group: 'xiaozhi',
    unset: 'plain MQTT (TCP)',
    about:
      'PEM certificate file (chain first) of the embedded MQTT server: with `XIAOZHI_MQTT_TLS_KEY`, it serves MQTT over TLS. The firmware speaks TLS when the endpoint it is given has port 8883 (and only then), and checks the certificate against the public CAs it carries: serve TLS on 8883, or advertise 8883 through `XIAOZHI_MQTT_PUBLIC_ENDPOINT`, with a certificate a public CA issued for that host.',
  })
  @IsOptional()
  @IsString()
  @MinLength(1)
  XIAOZHI_MQTT_TLS_CERT?: string;

  @Setting({ group: 'xiaozhi', unset: 'plain MQTT (TCP)', about: 'PEM private key file of `XIAOZHI_MQTT_TLS_CERT`.' })
  @IsOptional()
  @IsString()
  @MinLength(1)
  XIAOZHI_MQTT_TLS_KEY?: string;

  @Setting({
    group: 'xiaozhi',
    about:
      "`required`: a xiaozhi device must be activated by its owner before it gets a credential. An unbound device's configuration answer carries an `activation` code it speaks; its owner binds it with their own token (`POST /devices/activate`, the `activate_device` tool), and its next answer gives it a secret of its own (stored as a hash). `off`: every device gets `XIAOZHI_DEVICE_TOKEN`, as before. Needs tokens (`AUTH_TOKENS`, `AUTH_TOKENS_FILE` or `OIDC_ISSUERS`): a device is bound to its owner's principal.",
  })
  @IsIn(['off', 'required'], { message: 'XIAOZHI_ACTIVATION must be "off" or "required"' })
  XIAOZHI_ACTIVATION: 'off' | 'required' = 'off';

  @Setting({
    group: 'xiaozhi',
    unit: 'seconds',
    about: 'How long an activation code lives: the same device asking again meanwhile gets the same code; after it, a new one.',
  })
  @NumberFromEnv()
  @IsInt()
  @Min(30)
  @Max(3600)
  XIAOZHI_ACTIVATION_CODE_TTL_S = 300;

  @Setting({
    group: 'xiaozhi',
    about: 'Activation attempts (`POST /devices/activate`, right or wrong) one source address may make per minute; past it, 429 `RATE_LIMITED`.',
  })
  @NumberFromEnv()
  @IsInt()
  @Min(1)
  XIAOZHI_ACTIVATION_ATTEMPTS_PER_ADDRESS = 10;

  @Setting({
    group: 'xiaozhi',
    about:
      'Activation attempts the whole gateway (every replica together) takes per minute; past it, every caller gets 429 `RATE_LIMITED` until the minute ends.',
  })
  @NumberFromEnv()
  @IsInt()
  @Min(1)
  XIAOZHI_ACTIVATION_ATTEMPTS_GLOBAL = 60;

  @Setting({
    group: 'xiaozhi',
    about:
      'Activation attempts one principal (token) may make per hour; past it, its attempts are refused (429) until the hour ends. This bound is what makes guessing a 6-digit code pointless (docs/guides/fleet-operations.md).',
  })
  @NumberFromEnv()
  @IsInt()
  @Min(1)
  XIAOZHI_ACTIVATION_ATTEMPTS_PER_PRINCIPAL = 20;

  @Setting({
    group: 'xiaozhi',
    about: 'Activation codes one source address may be handed per minute (configuration requests of unbound devices); past it, the answer is 429.',
  })
  @NumberFromEnv()
  @IsInt()
  @Min(1)
  XIAOZHI_ACTIVATION_CODES_PER_ADDRESS = 30;
}

/** Names of every variable the gateway reads, in declaration order. */
export const ENVIRONMENT_VARIABLE_NAMES: readonly (keyof EnvironmentVariables)[] = Object.keys(new EnvironmentVariables()) as (keyof EnvironmentVariables)[];

/** A value a caller may pass for a variable: the env's string, or an already typed value. */
export type EnvironmentInput = Partial<Record<keyof EnvironmentVariables, string | number | boolean | undefined>>;

/** Thrown at boot when a variable is invalid; the message names each bad variable. */
export class InvalidConfigurationError extends StartupError {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`);
  }
}

/** Whether any token is configured (`AUTH_TOKENS` or a tokens file): the shared routes are not open to everyone. */
export function tokensConfigured(
  env: Pick<EnvironmentVariables, 'AUTH_TOKENS' | 'AUTH_TOKENS_FILE'> & Partial<Pick<EnvironmentVariables, 'OIDC_ISSUERS'>>,
): boolean {
  return (
    env.AUTH_TOKENS.split(',').some((token) => token.trim() !== '') ||
    env.AUTH_TOKENS_FILE !== undefined ||
    (env.OIDC_ISSUERS ?? '').split(',').some((issuer) => issuer.trim() !== '')
  );
}

/**
 * A rule between settings, checked once each of `names` is valid on its own: a problem naming the
 * variable and what is wrong, or nothing. Kept here, beside the settings, so no service checks
 * its configuration on its own at start.
 */
interface CrossCheck {
  names: readonly (keyof EnvironmentVariables)[];
  problem(env: EnvironmentVariables): string | undefined;
}

const CROSS_CHECKS: readonly CrossCheck[] = [
  {
    names: ['XIAOZHI_TRANSPORT', 'XIAOZHI_MQTT_PORT'],
    problem: (env) =>
      env.XIAOZHI_TRANSPORT === 'mqtt' && env.XIAOZHI_MQTT_PORT === undefined
        ? 'XIAOZHI_TRANSPORT=mqtt needs XIAOZHI_MQTT_PORT: the MQTT server devices would be told to use is off'
        : undefined,
  },
  {
    names: ['XIAOZHI_MQTT_PORT', 'XIAOZHI_MQTT_SECRET', 'XIAOZHI_DEVICE_TOKEN'],
    problem: (env) =>
      env.XIAOZHI_MQTT_PORT !== undefined && env.XIAOZHI_MQTT_SECRET === undefined && env.XIAOZHI_DEVICE_TOKEN === undefined
        ? "XIAOZHI_MQTT_PORT needs XIAOZHI_MQTT_SECRET or XIAOZHI_DEVICE_TOKEN: devices' MQTT passwords are derived from one of them"
        : undefined,
  },
  {
    names: ['XIAOZHI_MQTT_TLS_CERT', 'XIAOZHI_MQTT_TLS_KEY'],
    problem: (env) =>
      (env.XIAOZHI_MQTT_TLS_CERT === undefined) !== (env.XIAOZHI_MQTT_TLS_KEY === undefined)
        ? 'XIAOZHI_MQTT_TLS_CERT and XIAOZHI_MQTT_TLS_KEY go together: set both to serve MQTT over TLS, or neither'
        : undefined,
  },
  {
    names: ['XIAOZHI_ACTIVATION'],
    problem: (env) =>
      env.XIAOZHI_ACTIVATION === 'required' && !tokensConfigured(env)
        ? "XIAOZHI_ACTIVATION=required needs tokens (AUTH_TOKENS, AUTH_TOKENS_FILE or OIDC_ISSUERS): a device is bound to the principal of its owner's token"
        : undefined,
  },
  {
    names: ['XIAOZHI_FIRMWARE_VERSION', 'XIAOZHI_FIRMWARE_URL'],
    problem: (env) =>
      (env.XIAOZHI_FIRMWARE_VERSION === undefined) !== (env.XIAOZHI_FIRMWARE_URL === undefined)
        ? 'XIAOZHI_FIRMWARE_VERSION and XIAOZHI_FIRMWARE_URL go together: set both to offer firmware, or neither'
        : undefined,
  },
  {
    names: ['VAD_THRESHOLD', 'VAD_END_THRESHOLD'],
    problem: (env) =>
      env.VAD_END_THRESHOLD > env.VAD_THRESHOLD
        ? `VAD_END_THRESHOLD (${env.VAD_END_THRESHOLD}) must not be above VAD_THRESHOLD (${env.VAD_THRESHOLD})`
        : undefined,
  },
  {
    names: ['LLM_SYSTEM_PROMPT', 'LLM_SYSTEM_PROMPT_FILE'],
    problem: (env) =>
      env.LLM_SYSTEM_PROMPT !== undefined && env.LLM_SYSTEM_PROMPT_FILE !== undefined ? 'Set LLM_SYSTEM_PROMPT or LLM_SYSTEM_PROMPT_FILE, not both' : undefined,
  },
  {
    names: ['MCP_UPSTREAM_RETRY_MIN', 'MCP_UPSTREAM_RETRY_MAX'],
    problem: (env) =>
      env.MCP_UPSTREAM_RETRY_MAX < env.MCP_UPSTREAM_RETRY_MIN
        ? `MCP_UPSTREAM_RETRY_MAX (${env.MCP_UPSTREAM_RETRY_MAX}) must not be less than MCP_UPSTREAM_RETRY_MIN (${env.MCP_UPSTREAM_RETRY_MIN})`
        : undefined,
  },
  {
    names: ['OIDC_ISSUERS', 'OIDC_AUDIENCE', 'PUBLIC_URL'],
    problem: (env) =>
      env.OIDC_ISSUERS.trim() !== '' && env.OIDC_AUDIENCE === undefined && env.PUBLIC_URL === undefined
        ? 'OIDC_ISSUERS needs the audience its tokens must carry: set PUBLIC_URL (the URL clients reach the gateway at) or OIDC_AUDIENCE'
        : undefined,
  },
  {
    names: ['OIDC_INTROSPECTION_URL', 'OIDC_INTROSPECTION_CLIENT_ID', 'OIDC_INTROSPECTION_CLIENT_SECRET'],
    problem: (env) =>
      env.OIDC_INTROSPECTION_URL !== undefined && (env.OIDC_INTROSPECTION_CLIENT_ID === undefined || env.OIDC_INTROSPECTION_CLIENT_SECRET === undefined)
        ? 'OIDC_INTROSPECTION_URL needs OIDC_INTROSPECTION_CLIENT_ID and OIDC_INTROSPECTION_CLIENT_SECRET: the endpoint answers authenticated clients only'
        : undefined,
  },
  {
    names: ['OIDC_INTROSPECTION_URL', 'OIDC_AUDIENCE', 'PUBLIC_URL'],
    problem: (env) =>
      env.OIDC_INTROSPECTION_URL !== undefined && env.OIDC_AUDIENCE === undefined && env.PUBLIC_URL === undefined
        ? 'OIDC_INTROSPECTION_URL needs the audience its tokens must carry: set PUBLIC_URL or OIDC_AUDIENCE'
        : undefined,
  },
  {
    names: ['CLOUD_HOST', 'AUTH_TOKENS', 'AUTH_TOKENS_FILE', 'ALLOW_UNAUTHENTICATED'],
    problem: (env) =>
      env.CLOUD_HOST !== undefined && !isLoopbackHost(env.CLOUD_HOST) && !tokensConfigured(env) && !env.ALLOW_UNAUTHENTICATED
        ? `CLOUD_HOST=${env.CLOUD_HOST} with no AUTH_TOKENS or AUTH_TOKENS_FILE would open the model and every tool to anyone who reaches it: set AUTH_TOKENS (or ALLOW_UNAUTHENTICATED=true to do so knowingly)`
        : undefined,
  },
  {
    names: ['MCP_WS_AUTH_TOKEN', 'MCP_WS_ALLOW_DEFAULT_TOKEN'],
    problem: (env) =>
      env.MCP_WS_AUTH_TOKEN === MCP_PLACEHOLDER_TOKEN && !env.MCP_WS_ALLOW_DEFAULT_TOKEN
        ? `MCP_WS_AUTH_TOKEN is the spec's placeholder "${MCP_PLACEHOLDER_TOKEN}", which anyone can guess: set a strong token (or MCP_WS_ALLOW_DEFAULT_TOKEN=true to use it anyway)`
        : undefined,
  },
];

const TYPE_CONSTRAINTS = ['isInt', 'isNumber', 'isBoolean', 'isString', 'isUrl', 'isIn'];

/**
 * Validates raw settings (process.env plus any overrides) into {@link EnvironmentVariables}: each
 * variable, then the rules between them. Unknown keys are ignored, empty strings mean "unset" so
 * that `LLM_API_KEY=` keeps the default. Throws {@link InvalidConfigurationError} listing every problem.
 */
export function validateEnvironment(raw: Record<string, unknown>): EnvironmentVariables {
  const known: Record<string, unknown> = {};
  for (const name of ENVIRONMENT_VARIABLE_NAMES) {
    const value = raw[name];
    if (value !== undefined && value !== null && value !== '') known[name] = value;
  }
  const env = plainToInstance(EnvironmentVariables, known);
  const errors = validateSync(env, { skipMissingProperties: false, forbidUnknownValues: false });
  const problems = errors.map((error) => {
    const constraints = error.constraints ?? {};
    // "abc" for a port breaks the range checks too; the type is what the user needs to hear.
    const typeCheck = TYPE_CONSTRAINTS.find((name) => constraints[name] !== undefined);
    const messages = typeCheck ? constraints[typeCheck] : Object.values(constraints).join('; ');
    return `${messages} (got ${JSON.stringify(known[error.property])})`;
  });
  const invalid = new Set(errors.map((error) => error.property));
  for (const check of CROSS_CHECKS) {
    if (check.names.some((name) => invalid.has(name))) continue;
    const problem = check.problem(env);
    if (problem !== undefined) problems.push(problem);
  }
  if (problems.length > 0) throw new InvalidConfigurationError(problems);
  return env;
}
