import { Transform } from 'class-transformer';
import { ValidateBy } from 'class-validator';
import { isKnownTimeZone } from '../shared/time-zone';

/**
 * The sections of the configuration reference and of `.env.example`, in their order there. A
 * section is a concern an operator looks for (the model, MCP, limits), not a module of the code.
 */
export const SETTING_GROUPS = {
  server: { title: 'Server', about: 'The one HTTP server that carries every protocol, and how it stops.' },
  auth: { title: 'Auth', about: 'One bearer-token check for every protocol, and which browser pages and host names may reach the gateway.' },
  llm: { title: 'LLM', about: 'The OpenAI-compatible model server (vLLM, Ollama, OpenAI, ...) and how a turn uses it.' },
  speech: {
    title: 'Speech',
    about:
      'The OpenAI-compatible speech servers a voice device hears and speaks through: recognition (`STT_*`, `/v1/audio/transcriptions`) and synthesis (`TTS_*`, `/v1/audio/speech`). Each is off while its base URL is unset.',
  },
  tools: { title: 'Tools', about: 'Server tools: their time limit, and where the built-in tools get their data.' },
  voice: {
    title: 'Voice',
    about: "How a voice device's audio is heard: when its user starts and stops talking (Silero VAD), and how much of it an utterance keeps.",
  },
  xiaozhi: {
    title: 'xiaozhi devices',
    about:
      'Devices running the xiaozhi firmware (78/xiaozhi-esp32): the configuration answer at `/xiaozhi/ota/` and their WebSocket sessions at `/xiaozhi/v1/`.',
  },
  clientTools: { title: 'Client tools', about: 'Tools a device registers over its LLM-gateway connection.' },
  fleet: {
    title: 'Fleet',
    about: 'Devices that name themselves (`Device-Id`): their tools for agents, speech pushed to them, reminders; across every instance sharing `REDIS_URL`.',
  },
  mcp: { title: 'MCP', about: 'MCP as a whole: every MCP route, and the upstream MCP servers.' },
  mcpWebSocket: {
    title: 'MCP over WebSocket',
    about: "MCP's token, and the dedicated MCP WebSocket listener (`/mcp` on `CLOUD_PORT` is served either way).",
  },
  mcpHttp: { title: 'MCP Streamable HTTP', about: 'Caps on MCP Streamable HTTP sessions.' },
  mcpUpstream: { title: 'Upstream MCP servers', about: 'MCP servers whose tools join the catalogue, and how the gateway keeps them connected.' },
  connections: { title: 'WebSocket connections', about: 'Caps and keep-alive of WebSocket connections, whatever their protocol.' },
  sessions: { title: 'Sessions', about: 'How long sessions live, what they keep, and where (in memory, or in a Redis shared by every instance).' },
  console: { title: 'Web console', about: 'The web test console.' },
  logging: { title: 'Logging', about: 'What the gateway logs, and how.' },
  operations: { title: 'Metrics and readiness', about: 'Prometheus metrics and the readiness check.' },
  audit: { title: 'Audit log', about: 'One line per tool call and per LLM turn, logger context `Audit`.' },
  tracing: { title: 'Traces', about: 'OpenTelemetry traces, with the standard `OTEL_*` variables; off unless an endpoint is set.' },
} as const;

export type SettingGroup = keyof typeof SETTING_GROUPS;

/** What a setting documents besides its validation, which the reference reads from class-validator. */
export interface SettingDescription {
  group: SettingGroup;
  /**
   * What the setting does, for an operator: one paragraph, Markdown code spans allowed, no links
   * (`.env.example` shows it as a comment).
   */
  about: string;
  unit?: 'seconds' | 'milliseconds' | 'bytes' | 'characters';
  /** What an optional setting without a default means when it is unset ("the machine's zone"). */
  unset?: string;
}

const descriptions = new WeakMap<object, Map<string, SettingDescription>>();

/**
 * Documents a setting where it is declared, beside its validation, so the reference and
 * `.env.example` are generated from the one definition (`npm run config:docs`).
 */
export function Setting(description: SettingDescription): PropertyDecorator {
  return (prototype, property) => {
    const own = descriptions.get(prototype.constructor) ?? new Map<string, SettingDescription>();
    own.set(String(property), description);
    descriptions.set(prototype.constructor, own);
  };
}

/** The {@link Setting} description of `name` on `settings`, if it has one. */
export function settingDescription(settings: abstract new () => object, name: string): SettingDescription | undefined {
  return descriptions.get(settings)?.get(name);
}

/** Spellings accepted for a boolean variable; anything else is reported as invalid. */
export const TRUE_WORDS: ReadonlySet<string> = new Set(['true', '1', 'yes', 'on']);
export const FALSE_WORDS: ReadonlySet<string> = new Set(['false', '0', 'no', 'off']);

/**
 * Env values arrive as strings; class-transformer's implicit conversion would turn "false"
 * into `true`, so booleans are parsed explicitly and anything unrecognised is left as the
 * original string for `@IsBoolean()` to reject with the variable's name.
 */
export function BooleanFromEnv(): PropertyDecorator {
  return Transform(({ value }) => {
    if (typeof value === 'boolean') return value;
    const word = String(value).trim().toLowerCase();
    if (TRUE_WORDS.has(word)) return true;
    if (FALSE_WORDS.has(word)) return false;
    return value;
  });
}

/** Numbers are converted only when the whole string is numeric, so "9400abc" is rejected. */
export function NumberFromEnv(): PropertyDecorator {
  return Transform(({ value }) => {
    if (typeof value === 'number') return value;
    const text = String(value).trim();
    return text !== '' && Number.isFinite(Number(text)) ? Number(text) : value;
  });
}

/** A JSON object from its text; anything else is left as it is, for the validator to reject. */
export function JsonObjectFromEnv(): PropertyDecorator {
  return Transform(({ value }) => {
    if (typeof value !== 'string') return value;
    try {
      const parsed: unknown = JSON.parse(value);
      return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : value;
    } catch {
      return value;
    }
  });
}

/** An IANA time zone this runtime knows; `message` names the variable, as every start-up error does. */
export function IsTimeZone(message: string): PropertyDecorator {
  return ValidateBy({ name: 'isTimeZone', validator: { validate: (value) => typeof value === 'string' && isKnownTimeZone(value) } }, { message });
}
