import { PROTOCOL_VERSION_META_KEY, UnsupportedProtocolVersionError } from '@modelcontextprotocol/server';

/** The revision these binders serve; the 2025 ones are `revisions/2025`'s. */
export const MODERN_PROTOCOL_VERSION = '2026-07-28';

/** The `_meta` of a message that carries the 2026 envelope (its protocol version key), else `undefined`. */
export function modernEnvelopeOf(message: unknown): Record<string, unknown> | undefined {
  const meta = (message as { params?: { _meta?: unknown } } | null)?.params?._meta;
  return meta !== null && typeof meta === 'object' && PROTOCOL_VERSION_META_KEY in meta ? (meta as Record<string, unknown>) : undefined;
}

/**
 * Why a message that carries the 2026 envelope cannot be served, in the SDK's words (`-32022`,
 * with the revisions served), when it names another revision; `undefined` when it names this one.
 * The HTTP handler checks every request; a connection's server checks only its first, so its
 * connection checks the rest.
 */
export function unsupportedRevisionOf(envelope: Record<string, unknown>): UnsupportedProtocolVersionError | undefined {
  const requested = envelope[PROTOCOL_VERSION_META_KEY];
  if (requested === MODERN_PROTOCOL_VERSION) return undefined;
  return new UnsupportedProtocolVersionError({ supported: [MODERN_PROTOCOL_VERSION], requested: String(requested) });
}
