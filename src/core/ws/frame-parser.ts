/**
 * Events the parser emits for frames that cannot be routed by their `type`. The dispatcher
 * refuses them in words every protocol maps to its own answer, unless a gateway handles one
 * itself with `@OnFrame(FrameEvent.X)`. They start with `#`, which no protocol's `type` does,
 * and a frame whose `type` starts with `#` is routed as an unknown type rather than to these.
 */
export const FrameEvent = {
  /** Not JSON. Data: {@link MalformedFrame}. */
  MALFORMED: '#malformed',
  /** JSON, but not an object with a string `type` (plain JSON-RPC, a bare array...). Data: the value. */
  UNTYPED: '#untyped',
  /** An object whose `type` has no handler on this gateway. Data: the frame. */
  UNKNOWN_TYPE: '#unknown-type',
  /** Over the route's message limit, on routes that answer rather than close. Data: {@link OversizedFrame}. */
  TOO_LARGE: '#too-large',
} as const;

export interface MalformedFrame {
  reason: string;
}

export interface OversizedFrame {
  bytes: number;
  limit: number;
}

export interface ParsedFrame {
  event: string;
  data: unknown;
}

/** Byte length of a text frame, computed only when its UTF-16 length cannot rule it out. */
function exceeds(text: string, limit: number): number | undefined {
  if (text.length * 3 <= limit) return undefined;
  const bytes = Buffer.byteLength(text, 'utf8');
  return bytes > limit ? bytes : undefined;
}

/** Turns one WebSocket frame into the event its handler is registered under. */
export function parseFrame(raw: string | Buffer, limitBytes?: number): ParsedFrame {
  const text = typeof raw === 'string' ? raw : raw.toString('utf8');
  if (limitBytes !== undefined) {
    const bytes = exceeds(text, limitBytes);
    if (bytes !== undefined) return { event: FrameEvent.TOO_LARGE, data: { bytes, limit: limitBytes } };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { event: FrameEvent.MALFORMED, data: { reason: `Invalid JSON: ${(error as Error).message}` } };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { event: FrameEvent.UNTYPED, data: value };
  }
  const type = (value as { type?: unknown }).type;
  if (typeof type !== 'string') return { event: FrameEvent.UNTYPED, data: value };
  return { event: type.startsWith('#') ? FrameEvent.UNKNOWN_TYPE : type, data: value };
}
