import { XiaozhiProtocolVersion } from './framing';

/**
 * The text messages a device sends, byte for byte. The hello is printed by cJSON (the key order
 * below); the others are concatenated strings in protocol.cc, so the session id and the wake
 * word go out unescaped, exactly as the firmware sends them.
 */

export type ListeningMode = 'auto' | 'manual' | 'realtime';

/** Assets::text_font_capability: what the device's text font can render, for servers that push glyphs. */
export interface TextFontCapability {
  bundle: string;
  charset: string;
  size: number;
  bpp: number;
}

export interface HelloFields {
  version: XiaozhiProtocolVersion;
  /** Built with CONFIG_USE_SERVER_AEC: `features.aec` is true. */
  serverAec: boolean;
  /** Current firmware always says `mcp: true`; false leaves the key out, as older firmware did. */
  mcp: boolean;
  /** null: the device says `glyph_push: false` and no `text_font`. */
  textFont: TextFontCapability | null;
  sampleRate: number;
  frameDurationMs: number;
}

/** WebsocketProtocol::GetHelloMessage. */
export function helloMessage(fields: HelloFields): string {
  const features: Record<string, boolean> = {};
  if (fields.serverAec) features.aec = true;
  if (fields.mcp) features.mcp = true;
  features.glyph_push = fields.textFont !== null;
  return JSON.stringify({
    type: 'hello',
    version: fields.version,
    features,
    ...(fields.textFont
      ? { text_font: { bundle: fields.textFont.bundle, charset: fields.textFont.charset, size: fields.textFont.size, bpp: fields.textFont.bpp } }
      : {}),
    transport: 'websocket',
    audio_params: { format: 'opus', sample_rate: fields.sampleRate, channels: 1, frame_duration: fields.frameDurationMs },
  });
}

export function listenStartMessage(sessionId: string, mode: ListeningMode): string {
  return `{"session_id":"${sessionId}","type":"listen","state":"start","mode":"${mode}"}`;
}

export function listenStopMessage(sessionId: string): string {
  return `{"session_id":"${sessionId}","type":"listen","state":"stop"}`;
}

export function wakeWordDetectedMessage(sessionId: string, wakeWord: string): string {
  return `{"session_id":"${sessionId}","type":"listen","state":"detect","text":"${wakeWord}"}`;
}

/** The firmware knows one reason; without it the message has no `reason` key. */
export function abortMessage(sessionId: string, reason?: 'wake_word_detected'): string {
  return `{"session_id":"${sessionId}","type":"abort"${reason ? `,"reason":"${reason}"` : ''}}`;
}

/** Protocol::SendMcpMessage: `payload` is already JSON text. */
export function mcpMessage(sessionId: string, payload: string): string {
  return `{"session_id":"${sessionId}","type":"mcp","payload":${payload}}`;
}
