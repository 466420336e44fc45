import type { GatewayConfig } from '../../config/gateway-config';
import { isLoopbackHost } from '../../shared/loopback';
import { OriginPolicy } from './origin-policy';

const policyWith = (allowedOrigins: string[] = [], allowedHosts: string[] = []) =>
  new OriginPolicy({ auth: { tokens: [], allowedOrigins, allowedHosts } } as unknown as GatewayConfig);

describe('OriginPolicy', () => {
  describe('on a listener bound to every interface', () => {
    const policy = policyWith(['https://console.example.com']);

    it('takes requests without Origin, whatever their Host (devices, agents, a reverse proxy)', () => {
      expect(policy.refusal({ host: 'gateway.example.com' }, '0.0.0.0')).toBeUndefined();
      expect(policy.refusal({}, '::')).toBeUndefined();
    });

    it("takes the gateway's own pages and the allowed origins, and refuses other pages, localhost ones included", () => {
      expect(policy.refusal({ host: 'gateway.example.com', origin: 'https://gateway.example.com' }, '0.0.0.0')).toBeUndefined();
      expect(policy.refusal({ host: 'gateway.example.com', origin: 'https://console.example.com' }, '0.0.0.0')).toBeUndefined();
      expect(policy.refusal({ host: 'gateway.example.com', origin: 'http://localhost:3000' }, '0.0.0.0')).toContain('Origin "http://localhost:3000"');
      expect(policy.refusal({ host: 'gateway.example.com', origin: 'http://evil.example' }, '0.0.0.0')).toContain('ALLOWED_ORIGINS');
    });

    it('refuses origins that are not http(s) pages: "null", file:, garbage', () => {
      for (const origin of ['null', 'file://', 'chrome-extension://abc', '::::']) {
        expect(policy.refusal({ host: 'gateway.example.com', origin }, '0.0.0.0')).toBeDefined();
      }
    });

    it('names only cross-origin allowed pages for CORS', () => {
      expect(policy.isCrossOriginAllowed('https://console.example.com', 'gateway.example.com', '0.0.0.0')).toBe(true);
      expect(policy.isCrossOriginAllowed('https://gateway.example.com', 'gateway.example.com', '0.0.0.0')).toBe(false);
      expect(policy.isCrossOriginAllowed('http://evil.example', 'gateway.example.com', '0.0.0.0')).toBe(false);
    });
  });

  describe('on a loopback listener', () => {
    it('takes localhost pages and localhost names, and refuses a rebound name in Host', () => {
      const policy = policyWith();
      expect(policy.refusal({ host: 'localhost:9400', origin: 'http://localhost:5173' }, '127.0.0.1')).toBeUndefined();
      expect(policy.refusal({ host: '[::1]:9400', origin: 'http://127.0.0.1:9400' }, '::1')).toBeUndefined();
      expect(policy.refusal({ host: 'evil.example:9400', origin: 'http://evil.example:9400' }, '127.0.0.1')).toContain('Host "evil.example:9400"');
      expect(policy.refusal({}, '127.0.0.1')).toContain('Host');
    });

    it('takes the host names of ALLOWED_HOSTS (a proxy on the same machine)', () => {
      const policy = policyWith([], ['gateway.example.com']);
      expect(policy.refusal({ host: 'gateway.example.com' }, '127.0.0.1')).toBeUndefined();
      expect(policy.refusal({ host: 'other.example.com' }, '127.0.0.1')).toBeDefined();
    });

    it('clips what a client sent in the reason', () => {
      expect(policyWith().refusal({ host: 'a'.repeat(5000) }, '127.0.0.1')!.length).toBeLessThan(300);
    });
  });

  it('takes any origin with "*"', () => {
    expect(policyWith(['*']).refusal({ host: 'gateway.example.com', origin: 'http://anything.example' }, '0.0.0.0')).toBeUndefined();
  });

  it('knows loopback names and addresses', () => {
    for (const host of ['localhost', 'LOCALHOST', 'app.localhost', '127.0.0.1', '127.8.9.10', '::1', '[::1]', '::ffff:127.0.0.1'])
      expect(isLoopbackHost(host)).toBe(true);
    for (const host of ['0.0.0.0', '::', '10.0.0.1', 'example.com', 'localhost.example.com', '128.0.0.1']) expect(isLoopbackHost(host)).toBe(false);
  });
});
