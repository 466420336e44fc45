import { ProtocolError, SdkError, SdkErrorCode, SdkHttpError, SseError } from '@modelcontextprotocol/client';
import { brief, describeUpstreamError, isConnectionClosed, redactorFor, refusalOf } from './upstream-errors';
import type { UpstreamServerConfig } from './upstream-servers.config';

const settings = { name: 's', prefix: 's.', disabled: false, connectTimeoutMs: 1000, callTimeoutMs: 1000 };

describe('upstream errors', () => {
  it('tells an HTTP refusal by its status only, never by the body the SDK quotes', () => {
    const revoked = 'Error POSTing to endpoint: {"error":"token sk-123 revoked"}';
    expect(describeUpstreamError(new SdkHttpError(SdkErrorCode.ClientHttpAuthentication, revoked, { status: 401 }))).toBe('HTTP 401 Unauthorized');
    expect(describeUpstreamError(new SseError(404, 'Non-200 status code (404)', undefined as never))).toBe('HTTP 404 Not Found');
    expect(describeUpstreamError(new SdkHttpError(SdkErrorCode.ClientHttpNotImplemented, 'odd', { status: 599 }))).toBe('unexpected HTTP response');
  });

  it('tells a network failure by its code, also when it failed the version negotiation', () => {
    const refused = Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } });
    expect(describeUpstreamError(refused)).toBe('fetch failed (ECONNREFUSED)');
    const probe = new SdkError(SdkErrorCode.EraNegotiationFailed, 'Version negotiation probe failed: fetch failed', { cause: refused }, { cause: refused });
    expect(describeUpstreamError(probe)).toBe('fetch failed (ECONNREFUSED)');
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

  it("tells an upstream's answer, in its own words and code, from a connection that failed", () => {
    expect(refusalOf(new ProtocolError(-32602, 'Unknown tool', { name: 'x' }))).toEqual({ code: -32602, message: 'Unknown tool', data: { name: 'x' } });
    // An SDK 1.x server words its errors with a prefix of its own.
    expect(refusalOf(new ProtocolError(-32602, 'MCP error -32602: Unknown tool'))).toMatchObject({ message: 'Unknown tool' });
    expect(refusalOf(new SdkError(SdkErrorCode.RequestTimeout, 'Request timed out'))).toEqual({ code: -32001, message: 'Request timed out' });
    expect(refusalOf(new SdkError(SdkErrorCode.SendFailed, 'write EPIPE'))).toBeUndefined();
    expect(refusalOf(new TypeError('fetch failed'))).toBeUndefined();
    expect(isConnectionClosed(new SdkError(SdkErrorCode.ConnectionClosed, 'Connection closed'))).toBe(true);
    expect(isConnectionClosed(new ProtocolError(-32000, 'Connection closed'))).toBe(false);
  });

  it('cuts long texts for logs and /health', () => {
    expect(brief('short')).toBe('short');
    expect(brief('x'.repeat(1000))).toBe(`${'x'.repeat(299)}…`);
  });
});
