import { Module } from '@nestjs/common';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { createGatewayApp } from '../../src/bootstrap';
import { CalculatorModule } from '../../src/examples/calculator/calculator.module';
import { GatewayModule } from '../../src/gateway.module';
import { TEST_SETTINGS } from '../support/gateway';
import { TestAuthorizationServer } from '../support/oidc-provider';
import { freePort } from '../support/ports';

const REDIRECT_URL = 'http://127.0.0.1/callback';

/**
 * The MCP SDK client's OAuth support, as a desktop assistant uses it: a public client with
 * PKCE. Its "browser" follows the authorization server's redirects (the test provider approves
 * at once) and hands the code back.
 */
class TestOAuthClient implements OAuthClientProvider {
  saved?: OAuthTokens;
  verifier = '';
  code?: string;
  authorizationUrl?: URL;

  get redirectUrl(): string {
    return REDIRECT_URL;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'identity-e2e',
      redirect_uris: [REDIRECT_URL],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      scope: 'tools:call',
    };
  }

  clientInformation(): OAuthClientInformationMixed {
    return { client_id: 'mcp-desktop' };
  }

  tokens(): OAuthTokens | undefined {
    return this.saved;
  }

  saveTokens(tokens: OAuthTokens): void {
    this.saved = tokens;
  }

  async redirectToAuthorization(url: URL): Promise<void> {
    this.authorizationUrl = url;
    this.code = await followToCode(url);
  }

  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }

  codeVerifier(): string {
    return this.verifier;
  }
}

/** Follows redirects (with the cookies they set) until one goes to the redirect URL; returns its code. */
async function followToCode(start: URL): Promise<string> {
  const cookies = new Map<string, string>();
  let url = start.toString();
  const visited: string[] = [];
  for (let hop = 0; hop < 10; hop++) {
    if (url.startsWith(REDIRECT_URL)) {
      const returned = new URL(url);
      const code = returned.searchParams.get('code');
      if (!code) throw new Error(`No code: ${url}`);
      return code;
    }
    visited.push(url);
    const response = await fetch(url, { redirect: 'manual', headers: { cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join('; ') } });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair.indexOf('=');
      cookies.set(pair.slice(0, at), pair.slice(at + 1));
    }
    const location = response.headers.get('location');
    if (!location) throw new Error(`Stuck at ${url}: ${response.status} ${await response.text()}`);
    url = new URL(location, url).toString();
  }
  throw new Error(`Too many redirects: ${visited.join(' -> ')}`);
}

describe("the MCP SDK client's OAuth flow (authorization code + PKCE) against /mcp", () => {
  let provider: TestAuthorizationServer;
  let app: NestExpressApplication;
  let base: string;

  beforeAll(async () => {
    provider = await TestAuthorizationServer.start();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    @Module({
      imports: [
        GatewayModule.forRoot({ settings: { ...TEST_SETTINGS, OIDC_ISSUERS: provider.issuer, PUBLIC_URL: base, AUTH_TOKENS: 'static-secret-of-the-tests' } }),
        CalculatorModule,
      ],
    })
    class OAuthTestModule {}
    app = await createGatewayApp(OAuthTestModule, { handleSignals: false });
    await app.listen(port, '127.0.0.1');
  }, 30_000);
  afterAll(async () => {
    await app?.close();
    await provider?.stop();
  });

  it('discovers the authorization server from the 401, gets a token for /mcp and calls a tool', async () => {
    const oauth = new TestOAuthClient();
    const first = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: oauth });
    const refused = await new Client({ name: 'identity-oauth', version: '1.0.0' }).connect(first).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(UnauthorizedError);
    // The authorization request names the gateway's MCP resource (RFC 8707) and uses PKCE.
    expect(oauth.authorizationUrl?.origin).toBe(provider.issuer);
    expect(oauth.authorizationUrl?.searchParams.get('resource')).toBe(`${base}/mcp`);
    expect(oauth.authorizationUrl?.searchParams.get('code_challenge_method')).toBe('S256');
    await first.finishAuth(oauth.code!);
    const claims = JSON.parse(Buffer.from(oauth.saved!.access_token.split('.')[1], 'base64url').toString()) as { aud: string; sub: string };
    expect(claims).toMatchObject({ aud: `${base}/mcp`, sub: 'alice' });

    const client = new Client({ name: 'identity-oauth', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: oauth }));
    try {
      const sum = await client.callTool({ name: 'calculator', arguments: { a: 20, b: 22 } });
      expect(sum.isError).toBeFalsy();
      expect(JSON.stringify(sum.content)).toContain('42');
    } finally {
      await client.close();
    }
  });
});
