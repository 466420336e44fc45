import { mkdtempSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { loadGatewayConfig } from '../../config/gateway-config';
import { AccessTokenService } from '../auth/access-token.service';
import { MemoryRateLimiter } from './memory-rate-limiter';
import { RateLimitService } from './rate-limit.service';
import { RateLimitedError } from './rate-limited.error';
import { GatewayState } from '../state/gateway-state';

describe('MemoryRateLimiter', () => {
  it('lets `limit` requests through per window and per key, then says how long until the window ends', () => {
    let now = 1_000;
    const limiter = new MemoryRateLimiter(() => now);
    expect(limiter.hit('a', 2, 60_000)).toEqual({ allowed: true });
    now += 10_000;
    expect(limiter.hit('a', 2, 60_000)).toEqual({ allowed: true });
    expect(limiter.hit('b', 2, 60_000)).toEqual({ allowed: true });
    expect(limiter.hit('a', 2, 60_000)).toEqual({ allowed: false, retryAfterMs: 50_000 });
    now += 50_000;
    expect(limiter.hit('a', 2, 60_000)).toEqual({ allowed: true });
  });
});

describe('RateLimitedError', () => {
  it('rounds the wait up to whole seconds, at least one', () => {
    expect(new RateLimitedError('turns', 3, 60_000, 1).wait).toEqual({ retry_after_s: 1 });
    expect(new RateLimitedError('turns', 3, 60_000, 12_001)).toMatchObject({
      code: 'RATE_LIMITED',
      retryAfterS: 13,
      message: expect.stringMatching(/at most 3 turns per 60 s; try again in 13 s/),
    });
  });
});

describe('RateLimitService', () => {
  it('answers at once, without a promise, for tokens without limits and for in-memory counters; refuses past the limit', () => {
    const dir = mkdtempSync(join(tmpdir(), 'vtg-limits-'));
    try {
      const path = join(dir, 'tokens.yaml');
      writeFileSync(path, 'tokens: [{name: free, token: free-secret}, {name: tight, token: tight-secret, rate_limits: {tool_calls_per_minute: 1}}]', {
        mode: 0o600,
      });
      const config = loadGatewayConfig({ AUTH_TOKENS_FILE: path, AUTH_TOKENS: 'shared-secret' });
      const limits = new RateLimitService(config, new AccessTokenService(config), new GatewayState(config));
      for (let i = 0; i < 3; i += 1) {
        expect(limits.admitToolCall('name:free')).toBeUndefined();
        expect(limits.admitTurn('token:0123456789abcdef')).toBeUndefined();
      }
      expect(limits.admitToolCall('name:tight')).toBeUndefined();
      expect(() => limits.admitToolCall('name:tight')).toThrow(RateLimitedError);
      expect(limits.admitTurn('name:tight')).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
