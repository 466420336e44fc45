import type { LogLevel } from '@nestjs/common';
import { readFileSync } from 'fs';
import { join, resolve } from 'path';
import { systemTimeZone } from '../shared/time-zone';
import { EnvironmentInput, EnvironmentVariables, InvalidConfigurationError, LogLevelName, tokensConfigured, validateEnvironment } from './environment';

export { MCP_PLACEHOLDER_TOKEN } from './environment';

/** What a connection may take to send its first request (slowloris), on every listener. */
export interface RequestHeaderLimits {
  /** How long a new connection may take to send its first request's headers (an upgrade included). */
  timeoutMs: number;
  /** Connections still sending their first request's headers, all together; more are dropped at once. */
  maxIncomplete: number;
}

/** DI token of the validated, typed {@link GatewayConfig}. */
export const GATEWAY_CONFIG = Symbol('GATEWAY_CONFIG');

export interface ConnectionCapsConfig {
  total: number;
  /** LiteMCP's and UTCP's own cap. */
  perProtocol: number;
  /** 0: no limit. */
  perAddress: number;
  /** 0: no limit; the anonymous principal (auth off) is never counted. */
  perPrincipal: number;
  unauthenticated: number;
  /** Bytes a socket may send before it has authenticated. */
  unauthenticatedMaxBytes: number;
  authTimeoutMs: number;
  maxBufferedBytes: number;
  /** Tool calls one connection may have running at once. */
  maxCallsInFlight: number;
}

/** The speech recognition server (`STT_*`), when `STT_BASE_URL` is set. */
export interface SpeechRecognizerConfig {
  baseUrl: string;
  model: string;
  /** ISO-639-1; the engine detects the language when unset. */
  language?: string;
  apiKey?: string;
  timeoutMs: number;
}

/** The speech synthesis server (`TTS_*`), when `TTS_BASE_URL` is set. */
export interface SpeechSynthesizerConfig {
  baseUrl: string;
  model: string;
  voice: string;
  format: 'pcm' | 'wav';
  /** The rate of `pcm` answers, which carry no header to say it. */
  sampleRate: number;
  apiKey?: string;
  /** How long the server may stay silent: before its first audio, and between two pieces. */
  idleTimeoutMs: number;
  /** The server's own default when unset. */
  speed?: number;
}

/**
 * The configuration the code reads: grouped by concern, durations in milliseconds,
 * lists already split. Built once at boot from {@link EnvironmentVariables}.
 */
export interface GatewayConfig {
  server: {
    host: string;
    port: number;
    pingIntervalMs: number;
    pingTimeoutMs: number;
    maxConnections: number;
    maxMessageBytes: number;
    logLevels: LogLevel[];
    logFormat: 'json' | 'text';
    drainTimeoutMs: number;
    /** What a connection may take to send its first request (slowloris). */
    requestHeaders: RequestHeaderLimits;
  };
  /** Caps on WebSocket connections, whatever their protocol. */
  connections: ConnectionCapsConfig;
  session: {
    timeoutMs: number;
    maxHistory: number;
    /** Sessions one token keeps (0: no limit); the anonymous principal (auth off) is not counted. */
    maxPerPrincipal: number;
    cleanupIntervalMs: number;
    /** Sessions live in this Redis when set, in memory otherwise. */
    redisUrl?: string;
    redisKeyPrefix: string;
  };
  auth: {
    /** Listening beyond loopback with no tokens was asked for knowingly. */
    allowUnauthenticated: boolean;
    tokens: string[];
    /** Named tokens with permissions and limits (absolute path); none when unset. */
    tokensFile?: string;
    /** The window `*_per_minute` limits count in (60 s normally). */
    rateLimitWindowMs: number;
    /** Origins whose pages may call the gateway (normalised; `*` any), besides its own. */
    allowedOrigins: string[];
    /** Host names accepted when listening on loopback, besides localhost names (lower case). */
    allowedHosts: string[];
    /** The URL clients reach the gateway at, without a trailing slash; none when unset. */
    publicUrl?: string;
    /** JWT access tokens from OpenID Connect / OAuth 2.1 authorization servers. */
    oidc: {
      /** Trusted issuers (as written, no trailing-slash normalisation: `iss` is compared exactly). */
      issuers: string[];
      /** Accepted `aud` values. */
      audiences: string[];
      algorithms: string[];
      clockSkewSeconds: number;
      fetchTimeoutMs: number;
      /** Least time between two key fetches an unknown `kid` causes. */
      jwksCooldownMs: number;
      /** RFC 7662 introspection of opaque tokens, when `OIDC_INTROSPECTION_URL` is set. */
      introspection?: { url: string; clientId: string; clientSecret: string };
      /** `scopes_supported` of the protected resource metadata. */
      scopes: string[];
    };
  };
  /** The speech engines; either is absent when its base URL is unset (off). */
  speech: { recognizer?: SpeechRecognizerConfig; synthesizer?: SpeechSynthesizerConfig };
  tools: {
    serverToolTimeoutMs: number;
    defaultTimezone: string;
    weather: { geocodingUrl: string; forecastUrl: string };
    location: { city?: string; country?: string; latitude?: number; longitude?: number; providerUrl?: string };
    roleplayCharactersFile: string;
  };
  llm: {
    baseUrl: string;
    model: string;
    apiKey?: string;
    timeoutMs: number;
    temperature: number;
    maxTokens: number;
    enableContext: boolean;
    maxRetries: number;
    maxToolRounds: number;
    /** The system prompt template (`{current_time}` is filled in per request); the spec's when unset. */
    systemPrompt?: string;
    /** Merged into every model request's body (vendor options). */
    extraBody: Record<string, unknown>;
    /** Whether new connections stream sentences. */
    streamByDefault: boolean;
    /** How long a streaming turn's tool round runs before a filler sentence; 0 never. */
    fillerDelayMs: number;
    /** Characters of one tool result the model reads; the rest is cut. */
    maxToolResultChars: number;
    /** Characters of a tool's result a `tool_call` frame echoes; past it, a preview and the size. */
    toolCallEchoChars: number;
  };
  /** xiaozhi devices: what their configuration answer gives them, and the audio they are sent. */
  xiaozhi: {
    /** The token every device without one of its own is given (`XIAOZHI_DEVICE_TOKEN`). */
    deviceToken?: string;
    firmware?: { version: string; url: string };
    /** The sample rate of the Opus audio sent to devices. */
    outputSampleRate: 16000 | 24000 | 48000;
    /** Which transport the configuration answer tells devices to use. */
    transport: 'websocket' | 'mqtt';
    /** The embedded MQTT server and UDP audio socket; absent when `XIAOZHI_MQTT_PORT` is unset. */
    mqtt?: {
      host: string;
      port: number;
      publicEndpoint?: string;
      /** What devices' MQTT passwords are derived from: `XIAOZHI_MQTT_SECRET`, else `XIAOZHI_DEVICE_TOKEN`. */
      secret: string;
      udpPort: number;
      udpPublicHost?: string;
      /** The UDP port devices are told: this instance's own behind a balancer that gives each instance one. */
      udpPublicPort?: number;
      /** Connections held at once, and per remote address (0: no limit). */
      maxConnections: number;
      maxConnectionsPerAddress: number;
      /** PEM certificate and key files: MQTT over TLS when set. */
      tls?: { certFile: string; keyFile: string };
    };
    /** Activation of unbound devices by their owner's code, and a credential per device; absent while `XIAOZHI_ACTIVATION=off`. */
    activation?: {
      codeTtlMs: number;
      attemptsPerAddress: number;
      attemptsGlobal: number;
      attemptsPerPrincipal: number;
      codesPerAddress: number;
    };
  };
  /** When a voice device's user starts and stops talking. */
  voice: {
    vad: { startThreshold: number; endThreshold: number; minSpeechMs: number; silenceMs: number };
    /** Longest utterance heard before it is ended as if the user had stopped. */
    maxUtteranceMs: number;
    /** Audio kept from before speech was detected. */
    prerollMs: number;
  };
  mcp: {
    enabled: boolean;
    serverName: string;
    protocolVersion: string;
    /** Defaults of the upstream MCP servers listed in `serversFile`; each server may override its timeouts. */
    upstream: {
      serversFile?: string;
      connectTimeoutMs: number;
      callTimeoutMs: number;
      pingIntervalMs: number;
      retryMinMs: number;
      retryMaxMs: number;
      /** Most bytes one upstream message may be; a larger answer fails its call. */
      maxResultBytes: number;
    };
    ws: {
      host: string;
      port: number;
      authToken?: string;
      /** Where a token generated for this run is written (then not printed). */
      authTokenFile?: string;
      allowDefaultToken: boolean;
      heartbeatIntervalMs: number;
      heartbeatTimeoutMs: number;
      authTimeoutMs: number;
      maxConnections: number;
    };
    /** MCP tasks: how long each is kept, and how many one principal holds. */
    tasks: { ttlMs: number; maxPerPrincipal: number };
    /** Caps on Streamable HTTP sessions. */
    http: {
      /** Held by this instance. */
      maxSessions: number;
      /** Per token, across instances sharing a Redis; 0: no limit. */
      maxSessionsPerPrincipal: number;
    };
  };
  clientTools: { enabled: boolean; maxCount: number; timeoutMs: number; resultQueueSize: number };
  fleet: {
    pushMaxChars: number;
    pushMaxDevices: number;
    holdMaxCount: number;
    /** Seconds, as `hold_s` is given. */
    holdMaxS: number;
    holdMaxPerPrincipal: number;
    /** How long an offline device's id stays its owner's, nothing pending. */
    ownershipLapseMs: number;
    /** Seconds: `holdS` and `maxAheadS` are compared with what tools are given. */
    reminders: { maxPerDevice: number; maxPerPrincipal: number; holdS: number; maxAheadS: number };
    /** Delivery receipts of pushes (`PUSH_RECEIPTS_*`), and the webhook their changes are posted to (`PUSH_WEBHOOK_*`) when its URL is set. */
    receipts: {
      ttlMs: number;
      max: number;
      webhook?: { url: string; timeoutMs: number; retries: number; backoffMs: number; queueMax: number; concurrency: number };
    };
  };
  console: { enabled: boolean };
  /** The OpenAPI description and Swagger UI (`OPENAPI_ENABLED`). */
  openApi: { enabled: boolean };
  /** `/metrics` on its own listener when `port` is not 0, on `CLOUD_PORT` otherwise. */
  metrics: { port: number; host: string };
  /** Readiness checks that do not count. */
  readiness: { ignore: string[] };
  audit: {
    enabled: boolean;
    /** Whether lines carry arguments and results (clipped). */
    withArguments: boolean;
  };
  /** OpenTelemetry traces; off when `tracesUrl` is unset. */
  tracing: {
    tracesUrl?: string;
    protocol: 'http/protobuf' | 'http/json';
    serviceName: string;
  };
}

const ORDERED_LEVELS: LogLevel[] = ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'];

/** The spec's Python-style level names mapped to the most verbose Nest level they allow. */
const LEVEL_CEILING: Record<LogLevelName, LogLevel> = {
  CRITICAL: 'fatal',
  FATAL: 'fatal',
  ERROR: 'error',
  WARNING: 'warn',
  WARN: 'warn',
  INFO: 'log',
  LOG: 'log',
  DEBUG: 'debug',
  VERBOSE: 'verbose',
};

function logLevelsUpTo(name: LogLevelName): LogLevel[] {
  return ORDERED_LEVELS.slice(0, ORDERED_LEVELS.indexOf(LEVEL_CEILING[name]) + 1);
}

const seconds = (value: number): number => Math.round(value * 1000);

/** The non-empty items of a comma-separated setting. */
const listOf = (value: string): string[] =>
  value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item.length > 0);

/** The characters shipped with the package (`data/` beside `src/` and `dist/`). */
const SHIPPED_CHARACTERS_FILE = join(__dirname, '..', '..', 'data', 'characters.json');

function readSystemPromptFile(path: string | undefined): string | undefined {
  if (path === undefined) return undefined;
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new InvalidConfigurationError([`LLM_SYSTEM_PROMPT_FILE cannot be read: ${(error as Error).message}`]);
  }
}

/** The OTLP base endpoint's traces URL: the standard appends `v1/traces` to it, whatever path it has. */
function tracesUrlOf(endpoint: string | undefined): string | undefined {
  if (endpoint === undefined) return undefined;
  return `${endpoint.replace(/\/+$/, '')}/v1/traces`;
}

export function buildGatewayConfig(env: EnvironmentVariables): GatewayConfig {
  return {
    server: {
      host: env.CLOUD_HOST ?? (tokensConfigured(env) ? '0.0.0.0' : '127.0.0.1'),
      port: env.CLOUD_PORT,
      pingIntervalMs: seconds(env.CLOUD_PING_INTERVAL),
      pingTimeoutMs: seconds(env.CLOUD_PING_TIMEOUT),
      maxConnections: env.CLOUD_MAX_CONNECTIONS,
      maxMessageBytes: env.CLOUD_MAX_MESSAGE_SIZE,
      logLevels: logLevelsUpTo(env.CLOUD_LOG_LEVEL),
      logFormat: env.CLOUD_LOG_FORMAT,
      drainTimeoutMs: seconds(env.SHUTDOWN_DRAIN_TIMEOUT),
      requestHeaders: { timeoutMs: seconds(env.HTTP_HEADERS_TIMEOUT), maxIncomplete: env.HTTP_MAX_INCOMPLETE_REQUESTS },
    },
    connections: {
      total: env.WS_MAX_CONNECTIONS,
      perProtocol: env.WS_MAX_CONNECTIONS_PER_PROTOCOL,
      perAddress: env.WS_MAX_CONNECTIONS_PER_ADDRESS,
      perPrincipal: env.WS_MAX_CONNECTIONS_PER_PRINCIPAL,
      unauthenticated: env.WS_MAX_UNAUTHENTICATED,
      unauthenticatedMaxBytes: env.WS_UNAUTHENTICATED_MAX_BYTES,
      authTimeoutMs: seconds(env.WS_AUTH_TIMEOUT),
      maxBufferedBytes: env.WS_MAX_BUFFERED_BYTES,
      maxCallsInFlight: env.WS_MAX_CALLS_IN_FLIGHT,
    },
    session: {
      timeoutMs: seconds(env.CLOUD_SESSION_TIMEOUT),
      maxHistory: env.CLOUD_SESSION_MAX_HISTORY,
      maxPerPrincipal: env.CLOUD_SESSION_MAX_PER_PRINCIPAL,
      cleanupIntervalMs: seconds(env.CLOUD_SESSION_CLEANUP_INTERVAL),
      redisUrl: env.REDIS_URL,
      redisKeyPrefix: env.REDIS_KEY_PREFIX,
    },
    auth: {
      allowUnauthenticated: env.ALLOW_UNAUTHENTICATED,
      tokens: listOf(env.AUTH_TOKENS),
      tokensFile: env.AUTH_TOKENS_FILE === undefined ? undefined : resolve(env.AUTH_TOKENS_FILE),
      rateLimitWindowMs: seconds(env.RATE_LIMIT_WINDOW),
      allowedOrigins: listOf(env.ALLOWED_ORIGINS).map((origin) => (origin === '*' ? origin : new URL(origin).origin)),
      allowedHosts: listOf(env.ALLOWED_HOSTS).map((host) => host.toLowerCase()),
      publicUrl: env.PUBLIC_URL === undefined ? undefined : env.PUBLIC_URL.replace(/\/+$/, ''),
      oidc: {
        issuers: listOf(env.OIDC_ISSUERS),
        audiences:
          env.OIDC_AUDIENCE !== undefined
            ? listOf(env.OIDC_AUDIENCE)
            : env.PUBLIC_URL === undefined
              ? []
              : [env.PUBLIC_URL.replace(/\/+$/, ''), `${env.PUBLIC_URL.replace(/\/+$/, '')}/mcp`],
        algorithms: listOf(env.OIDC_ALGORITHMS),
        clockSkewSeconds: env.OIDC_CLOCK_SKEW,
        fetchTimeoutMs: seconds(env.OIDC_FETCH_TIMEOUT),
        jwksCooldownMs: seconds(env.OIDC_JWKS_COOLDOWN),
        scopes: listOf(env.OIDC_SCOPES),
        introspection:
          env.OIDC_INTROSPECTION_URL === undefined
            ? undefined
            : { url: env.OIDC_INTROSPECTION_URL, clientId: env.OIDC_INTROSPECTION_CLIENT_ID!, clientSecret: env.OIDC_INTROSPECTION_CLIENT_SECRET! },
      },
    },
    speech: {
      recognizer:
        env.STT_BASE_URL === undefined
          ? undefined
          : { baseUrl: env.STT_BASE_URL, model: env.STT_MODEL, language: env.STT_LANGUAGE, apiKey: env.STT_API_KEY, timeoutMs: seconds(env.STT_TIMEOUT) },
      synthesizer:
        env.TTS_BASE_URL === undefined
          ? undefined
          : {
              baseUrl: env.TTS_BASE_URL,
              model: env.TTS_MODEL,
              voice: env.TTS_VOICE,
              format: env.TTS_FORMAT,
              sampleRate: env.TTS_SAMPLE_RATE,
              apiKey: env.TTS_API_KEY,
              idleTimeoutMs: seconds(env.TTS_TIMEOUT),
              speed: env.TTS_SPEED,
            },
    },
    tools: {
      serverToolTimeoutMs: seconds(env.SERVER_TOOL_TIMEOUT),
      defaultTimezone: env.DEFAULT_TIMEZONE ?? systemTimeZone(),
      weather: { geocodingUrl: env.WEATHER_GEOCODING_URL, forecastUrl: env.WEATHER_FORECAST_URL },
      location: {
        city: env.LOCATION_CITY,
        country: env.LOCATION_COUNTRY,
        latitude: env.LOCATION_LATITUDE,
        longitude: env.LOCATION_LONGITUDE,
        providerUrl: env.LOCATION_PROVIDER_URL === 'off' ? undefined : env.LOCATION_PROVIDER_URL,
      },
      roleplayCharactersFile: resolve(env.ROLEPLAY_CHARACTERS_FILE ?? SHIPPED_CHARACTERS_FILE),
    },
    llm: {
      baseUrl: env.LLM_BASE_URL,
      model: env.LLM_MODEL,
      apiKey: env.LLM_API_KEY,
      timeoutMs: seconds(env.LLM_TIMEOUT),
      temperature: env.LLM_TEMPERATURE,
      maxTokens: env.LLM_MAX_TOKENS,
      enableContext: env.LLM_ENABLE_CONTEXT,
      maxRetries: env.LLM_MAX_RETRIES,
      maxToolRounds: env.LLM_MAX_TOOL_ROUNDS,
      systemPrompt: env.LLM_SYSTEM_PROMPT ?? readSystemPromptFile(env.LLM_SYSTEM_PROMPT_FILE),
      extraBody: env.LLM_EXTRA_BODY ?? {},
      streamByDefault: env.LLM_STREAM_DEFAULT,
      fillerDelayMs: seconds(env.TOOL_FILLER_DELAY),
      maxToolResultChars: env.LLM_MAX_TOOL_RESULT_CHARS,
      toolCallEchoChars: env.LLM_TOOL_CALL_ECHO_CHARS,
    },
    xiaozhi: {
      deviceToken: env.XIAOZHI_DEVICE_TOKEN,
      firmware:
        env.XIAOZHI_FIRMWARE_VERSION === undefined || env.XIAOZHI_FIRMWARE_URL === undefined
          ? undefined
          : { version: env.XIAOZHI_FIRMWARE_VERSION, url: env.XIAOZHI_FIRMWARE_URL },
      outputSampleRate: env.XIAOZHI_OUTPUT_SAMPLE_RATE as 16000 | 24000 | 48000,
      transport: env.XIAOZHI_TRANSPORT,
      mqtt:
        env.XIAOZHI_MQTT_PORT === undefined
          ? undefined
          : {
              host: env.XIAOZHI_MQTT_HOST ?? env.CLOUD_HOST ?? (tokensConfigured(env) ? '0.0.0.0' : '127.0.0.1'),
              port: env.XIAOZHI_MQTT_PORT,
              publicEndpoint: env.XIAOZHI_MQTT_PUBLIC_ENDPOINT,
              secret: env.XIAOZHI_MQTT_SECRET ?? `xiaozhi-device-token:${env.XIAOZHI_DEVICE_TOKEN ?? ''}`,
              udpPort: env.XIAOZHI_UDP_PORT ?? env.XIAOZHI_MQTT_PORT,
              udpPublicHost: env.XIAOZHI_UDP_PUBLIC_HOST,
              udpPublicPort: env.XIAOZHI_UDP_PUBLIC_PORT,
              maxConnections: env.XIAOZHI_MQTT_MAX_CONNECTIONS,
              maxConnectionsPerAddress: env.XIAOZHI_MQTT_MAX_CONNECTIONS_PER_ADDRESS,
              tls:
                env.XIAOZHI_MQTT_TLS_CERT === undefined || env.XIAOZHI_MQTT_TLS_KEY === undefined
                  ? undefined
                  : { certFile: env.XIAOZHI_MQTT_TLS_CERT, keyFile: env.XIAOZHI_MQTT_TLS_KEY },
            },
      activation:
        env.XIAOZHI_ACTIVATION === 'off'
          ? undefined
          : {
              codeTtlMs: env.XIAOZHI_ACTIVATION_CODE_TTL_S * 1000,
              attemptsPerAddress: env.XIAOZHI_ACTIVATION_ATTEMPTS_PER_ADDRESS,
              attemptsGlobal: env.XIAOZHI_ACTIVATION_ATTEMPTS_GLOBAL,
              attemptsPerPrincipal: env.XIAOZHI_ACTIVATION_ATTEMPTS_PER_PRINCIPAL,
              codesPerAddress: env.XIAOZHI_ACTIVATION_CODES_PER_ADDRESS,
            },
    },
    voice: {
      vad: { startThreshold: env.VAD_THRESHOLD, endThreshold: env.VAD_END_THRESHOLD, minSpeechMs: env.VAD_MIN_SPEECH_MS, silenceMs: env.VAD_SILENCE_MS },
      maxUtteranceMs: seconds(env.VOICE_MAX_UTTERANCE_S),
      prerollMs: env.VOICE_PREROLL_MS,
    },
    mcp: {
      enabled: env.MCP_ENABLED,
      serverName: env.MCP_SERVER_NAME,
      protocolVersion: env.MCP_PROTOCOL_VERSION,
      upstream: {
        serversFile: env.MCP_SERVERS_FILE === undefined ? undefined : resolve(env.MCP_SERVERS_FILE),
        connectTimeoutMs: seconds(env.MCP_UPSTREAM_CONNECT_TIMEOUT),
        callTimeoutMs: seconds(env.MCP_UPSTREAM_CALL_TIMEOUT ?? env.SERVER_TOOL_TIMEOUT),
        pingIntervalMs: seconds(env.MCP_UPSTREAM_PING_INTERVAL),
        retryMinMs: seconds(env.MCP_UPSTREAM_RETRY_MIN),
        retryMaxMs: seconds(env.MCP_UPSTREAM_RETRY_MAX),
        maxResultBytes: env.MCP_UPSTREAM_MAX_RESULT_BYTES,
      },
      ws: {
        host: env.MCP_WS_HOST,
        port: env.MCP_WS_PORT,
        authToken: env.MCP_WS_AUTH_TOKEN,
        authTokenFile: env.MCP_WS_AUTH_TOKEN_FILE === undefined ? undefined : resolve(env.MCP_WS_AUTH_TOKEN_FILE),
        allowDefaultToken: env.MCP_WS_ALLOW_DEFAULT_TOKEN,
        heartbeatIntervalMs: env.MCP_WS_HEARTBEAT_INTERVAL,
        heartbeatTimeoutMs: env.MCP_WS_HEARTBEAT_TIMEOUT,
        authTimeoutMs: env.MCP_WS_AUTH_TIMEOUT,
        maxConnections: env.MCP_WS_MAX_CONNECTIONS,
      },
      http: {
        maxSessions: env.MCP_HTTP_MAX_SESSIONS,
        maxSessionsPerPrincipal: env.MCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL,
      },
      tasks: {
        ttlMs: seconds(env.MCP_TASK_TTL),
        maxPerPrincipal: env.MCP_MAX_TASKS_PER_PRINCIPAL,
      },
    },
    clientTools: {
      enabled: env.CLIENT_TOOLS_ENABLED,
      maxCount: env.CLIENT_TOOLS_MAX_COUNT,
      timeoutMs: seconds(env.CLIENT_TOOL_TIMEOUT),
      resultQueueSize: env.CLIENT_TOOL_RESULT_QUEUE_SIZE,
    },
    fleet: {
      pushMaxChars: env.FLEET_PUSH_MAX_CHARS,
      pushMaxDevices: env.FLEET_PUSH_MAX_DEVICES,
      holdMaxCount: env.FLEET_HOLD_MAX_COUNT,
      holdMaxS: env.FLEET_HOLD_MAX_S,
      holdMaxPerPrincipal: env.FLEET_HOLD_MAX_PER_PRINCIPAL,
      ownershipLapseMs: env.FLEET_OWNERSHIP_LAPSE_S * 1000,
      reminders: {
        maxPerDevice: env.FLEET_REMINDERS_MAX_PER_DEVICE,
        maxPerPrincipal: env.FLEET_REMINDERS_MAX_PER_PRINCIPAL,
        holdS: env.FLEET_REMINDER_HOLD_S,
        maxAheadS: env.FLEET_REMINDER_MAX_AHEAD_S,
      },
      receipts: {
        ttlMs: env.PUSH_RECEIPTS_TTL_S * 1000,
        max: env.PUSH_RECEIPTS_MAX,
        ...(env.PUSH_WEBHOOK_URL && {
          webhook: {
            url: env.PUSH_WEBHOOK_URL,
            timeoutMs: seconds(env.PUSH_WEBHOOK_TIMEOUT),
            retries: env.PUSH_WEBHOOK_RETRIES,
            backoffMs: seconds(env.PUSH_WEBHOOK_RETRY_DELAY),
            queueMax: env.PUSH_WEBHOOK_QUEUE_MAX,
            concurrency: 8,
          },
        }),
      },
    },
    console: { enabled: env.CONSOLE_ENABLED },
    openApi: { enabled: env.OPENAPI_ENABLED },
    metrics: { port: env.METRICS_PORT, host: env.METRICS_HOST },
    readiness: { ignore: listOf(env.READINESS_IGNORE) },
    audit: { enabled: env.AUDIT_LOG, withArguments: env.AUDIT_LOG_ARGUMENTS },
    tracing: {
      tracesUrl: env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? tracesUrlOf(env.OTEL_EXPORTER_OTLP_ENDPOINT),
      protocol: env.OTEL_EXPORTER_OTLP_PROTOCOL,
      serviceName: env.OTEL_SERVICE_NAME,
    },
  };
}

/**
 * Validates `source` (normally process.env) with `overrides` on top, and builds the typed
 * config. Throws {@link InvalidConfigurationError} naming every bad variable.
 */
export function loadGatewayConfig(source: Record<string, unknown>, overrides: EnvironmentInput = {}): GatewayConfig {
  const merged: Record<string, unknown> = { ...source };
  for (const [name, value] of Object.entries(overrides)) {
    if (value !== undefined) merged[name] = value;
  }
  return buildGatewayConfig(validateEnvironment(merged));
}

/** Whether any token is configured (`AUTH_TOKENS` or a tokens file): the shared routes are not open to everyone. */
export function hasTokens(auth: GatewayConfig['auth']): boolean {
  return auth.tokens.length > 0 || auth.tokensFile !== undefined || auth.oidc.issuers.length > 0 || auth.oidc.introspection !== undefined;
}

/**
 * The log settings of `source`, falling back to the defaults when they are invalid: the logger
 * must exist before the full configuration is validated, to report that validation's errors.
 */
export function logSettingsFrom(source: Record<string, unknown>): Pick<GatewayConfig['server'], 'logLevels' | 'logFormat'> {
  const { CLOUD_LOG_LEVEL, CLOUD_LOG_FORMAT } = source;
  try {
    return loadGatewayConfig({ CLOUD_LOG_LEVEL, CLOUD_LOG_FORMAT }).server;
  } catch {
    return loadGatewayConfig({}).server;
  }
}
