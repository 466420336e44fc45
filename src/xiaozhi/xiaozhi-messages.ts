import type { FromSchema } from 'json-schema-to-ts';
import type { OpusFormat } from '../assistant/audio/opus-format';

/**
 * What a xiaozhi device sends as text frames (`docs/websocket.md`, `main/protocols/protocol.cc`),
 * as JSON Schemas the dispatcher checks. Unknown fields are ignored: the firmware adds some by
 * build (`features.aec`, `text_font`), and every message carries the `session_id` it was given.
 */

const sessionId = { type: 'string', maxLength: 128 } as const;

export const helloSchema = {
  type: 'object',
  properties: {
    type: { const: 'hello' },
    version: { type: 'integer', minimum: 1, maximum: 3, errorMessage: 'version must be 1, 2 or 3' },
    // `udp` over MQTT only: the gateway checks it against the connection's transport.
    transport: { enum: ['websocket', 'udp'], errorMessage: 'transport must be "websocket" (or "udp" over MQTT)' },
    features: { type: 'object', properties: { mcp: { type: 'boolean' } } },
    audio_params: {
      type: 'object',
      properties: {
        format: { const: 'opus', errorMessage: 'audio_params.format must be "opus"' },
        sample_rate: { type: 'integer', errorMessage: 'audio_params.sample_rate must be an integer' },
        channels: { const: 1, errorMessage: 'audio_params.channels must be 1' },
        frame_duration: { type: 'integer', errorMessage: 'audio_params.frame_duration must be an integer' },
      },
    },
  },
  required: ['type'],
} as const;
export type HelloMessage = FromSchema<typeof helloSchema>;

export const LISTENING_MODES = ['manual', 'auto', 'realtime'] as const;

export const listenSchema = {
  type: 'object',
  properties: {
    type: { const: 'listen' },
    session_id: sessionId,
    state: { enum: ['start', 'stop', 'detect'], errorMessage: 'state must be "start", "stop" or "detect"' },
    mode: { enum: LISTENING_MODES, errorMessage: 'mode must be "manual", "auto" or "realtime"' },
    text: { type: 'string', maxLength: 256, errorMessage: 'text must be a string of at most 256 characters' },
  },
  required: ['type', 'state'],
  errorMessage: { required: { state: 'listen needs a state' } },
} as const;
export type ListenMessage = FromSchema<typeof listenSchema>;

export const abortSchema = {
  type: 'object',
  properties: { type: { const: 'abort' }, session_id: sessionId, reason: { type: 'string', maxLength: 64 } },
  required: ['type'],
} as const;

export const mcpSchema = {
  type: 'object',
  properties: {
    type: { const: 'mcp' },
    session_id: sessionId,
    payload: { type: 'object', errorMessage: 'payload must be a JSON-RPC 2.0 message (an object)' },
  },
  required: ['type', 'payload'],
  errorMessage: { required: { payload: 'mcp needs a payload' } },
} as const;
export type McpMessage = FromSchema<typeof mcpSchema>;

export const goodbyeSchema = {
  type: 'object',
  properties: { type: { const: 'goodbye' }, session_id: sessionId },
  required: ['type'],
} as const;

/** What the gateway sends a device. */
export type XiaozhiServerMessage =
  | {
      type: 'hello';
      transport: string;
      session_id: string;
      audio_params: { format: 'opus'; sample_rate: number; channels: 1; frame_duration: number };
      /** Over MQTT: where and with which key and nonce the audio goes. */
      udp?: unknown;
    }
  | { type: 'stt'; session_id: string; text: string }
  | { type: 'llm'; session_id: string; emotion: string; text: string }
  | { type: 'tts'; session_id: string; state: 'start' | 'stop' }
  | { type: 'tts'; session_id: string; state: 'sentence_start'; text: string }
  | { type: 'alert'; session_id: string; status: string; message: string; emotion: string }
  | { type: 'mcp'; session_id: string; payload: unknown };

/** The server's hello: the session's id and the audio it will send, and what the connection's transport adds (over MQTT: `transport: "udp"` and its `udp` block). */
export function serverHello(sessionId: string, output: OpusFormat, transport: Record<string, unknown> = {}): XiaozhiServerMessage {
  return {
    type: 'hello',
    transport: 'websocket',
    session_id: sessionId,
    audio_params: { format: 'opus', sample_rate: output.sampleRate, channels: 1, frame_duration: output.frameDurationMs },
    ...transport,
  };
}
