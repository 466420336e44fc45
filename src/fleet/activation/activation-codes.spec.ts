import { createHmac } from 'crypto';
import { drawCode, drawDeviceSecret, hmacMatches, isCode, secretHash } from './activation-codes';

describe('activation codes and device secrets', () => {
  it('draws six-digit codes, leading zeros kept, spread over the whole space', () => {
    const codes = Array.from({ length: 2000 }, drawCode);
    expect(codes.every(isCode)).toBe(true);
    expect(new Set(codes.map((code) => code[0])).size).toBe(10);
    expect(isCode('12345')).toBe(false);
    expect(isCode('1234567')).toBe(false);
    expect(isCode(123456)).toBe(false);
  });

  it('draws secrets with their prefix and 256 bits, stored as their SHA-256', () => {
    const secret = drawDeviceSecret();
    expect(secret).toMatch(/^dev_[A-Za-z0-9_-]{43}$/);
    expect(drawDeviceSecret()).not.toBe(secret);
    expect(secretHash(secret)).toMatch(/^[0-9a-f]{64}$/);
  });

  it("accepts the firmware's hex HMAC of the challenge under the device key, and nothing else", () => {
    const key = Buffer.alloc(32, 7);
    const right = createHmac('sha256', key).update('challenge-1').digest('hex');
    expect(hmacMatches(key, 'challenge-1', right)).toBe(true);
    expect(hmacMatches(key, 'challenge-1', right.toUpperCase())).toBe(true);
    expect(hmacMatches(key, 'challenge-2', right)).toBe(false);
    expect(hmacMatches(Buffer.alloc(32, 8), 'challenge-1', right)).toBe(false);
    expect(hmacMatches(key, 'challenge-1', right.slice(2))).toBe(false);
    expect(hmacMatches(key, 'challenge-1', undefined)).toBe(false);
    expect(hmacMatches(key, 'challenge-1', '')).toBe(false);
  });
});
