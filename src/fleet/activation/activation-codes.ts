import { createHash, createHmac, randomBytes, randomInt, timingSafeEqual } from 'crypto';
import { DEVICE_SECRET_PREFIX } from '../../core/auth/device-credential';

/** Activation codes are six digits: what the firmware speaks, one digit sound each. */
export const CODE_DIGITS = 6;
const CODE = /^\d{6}$/;

/** A uniformly drawn six-digit code, leading zeros kept. */
export function drawCode(): string {
  return String(randomInt(0, 10 ** CODE_DIGITS)).padStart(CODE_DIGITS, '0');
}

export function isCode(value: unknown): value is string {
  return typeof value === 'string' && CODE.test(value);
}

/** What a serial-number device signs with its eFuse key: 32 random bytes, hex (the firmware HMACs the string's bytes). */
export function drawChallenge(): string {
  return randomBytes(32).toString('hex');
}

/** A device's own secret: 256 random bits, recognisable by its prefix. */
export function drawDeviceSecret(): string {
  return `${DEVICE_SECRET_PREFIX}${randomBytes(32).toString('base64url')}`;
}

/** What is stored of a device secret: its SHA-256, hex. */
export function secretHash(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/**
 * Whether `answer` (hex, as `Ota::GetActivationPayload` sends it) is HMAC-SHA256 of `challenge`
 * under `key`, compared in constant time.
 */
export function hmacMatches(key: Buffer, challenge: string, answer: unknown): boolean {
  if (typeof answer !== 'string' || !/^[0-9a-fA-F]{64}$/.test(answer)) return false;
  const expected = createHmac('sha256', key).update(challenge, 'utf8').digest();
  return timingSafeEqual(expected, Buffer.from(answer, 'hex'));
}
