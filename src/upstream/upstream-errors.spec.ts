import { SseError } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { brief, describeUpstreamError, redactorFor } from './upstream-errors';
import type { UpstreamServerConfig } from './upstream-servers.config';

const settings = { name: 's', prefix: 's.', disabled: false, connectTimeoutMs: 1000, callTimeoutMs: 1000 };

describe('upstream errors', () => {
  it('tells an HTTP refusal by its status only, never by the body the SDK quotes', () => {
    expect(describeUpstreamError(new StreamableHTTPError(401, 'Error POSTing to endpoint: {"error":"token sk-123 revoked"}'))).toBe('HTTP 401 Unauthorized');
    expect(describeUpstreamError(new SseError(404, 'Non-200 status code (404)', undefined as never))).toBe('HTTP 404 Not Found');
    expect(describeUpstreamError(new StreamableHTTPError(-1, 'Unexpected content type: text/html'))).toBe('unexpected HTTP response');
  });

  it('tells a network failure by its code', () => {
    expect(describeUpstreamError(Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } }))).toBe('fetch failed (ECONNREFUSED)');
    expect(describeUpstreamError(new Error('spawn nope ENOENT'))).toBe('spawn nope ENOENT');
    expect(describeUpstreamError('odd')).toBe('odd');
  });

  it('removes header, env and URL secrets from any text', () => {
    const remote: UpstreamServerConfig = {
      ...settings,
      transport: 'streamable-http',
      url: new URL('https://user:hunter22@mcp.example.com/mcp?key=abcdef123&v=1'),
      headers: { Authorization: 'Bearer tok-98765', 'X-Short': 'abc' },
      sseFallback: false,
    };
    const redact = redactorFor(remote);
    expect(redact('sent Bearer tok-98765, then tok-98765 again; key=abcdef123 v=1 abc')).toBe('sent ***, then *** again; key=*** v=1 abc');
    expect(redact('GET https://user:hunter22@mcp.example.com/ failed')).toBe('GET https://***@mcp.example.com/ failed');
    expect(redact('x'.repeat(1000))).toHaveLength(1000);

    const local: UpstreamServerConfig = { ...settings, transport: 'stdio', command: 'node', args: [], env: { GITHUB_TOKEN: 'ghp_secret42' } };
    expect(redactorFor(local)('auth failed for ghp_secret42')).toBe('auth failed for ***');
  });

  it('cuts long texts for logs and /health', () => {
    expect(brief('short')).toBe('short');
    expect(brief('x'.repeat(1000))).toBe(`${'x'.repeat(299)}…`);
  });
});
