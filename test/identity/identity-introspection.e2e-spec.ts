import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { RunningGateway, startGateway } from '../support/gateway';
import { TestAuthorizationServer } from '../support/oidc-provider';
import { TestSocket } from '../support/test-socket';

const PUBLIC_URL = 'http://gateway.test';
const OPAQUE_RESOURCE = `${PUBLIC_URL}/opaque`;

/** Opaque access tokens of a real authorization server (oidc-provider), checked by RFC 7662 introspection. */
describe('opaque access tokens, introspected (RFC 7662)', () => {
  let provider: TestAuthorizationServer;
  let gateway: RunningGateway;

  beforeAll(async () => {
    provider = await TestAuthorizationServer.start();
    gateway = await startGateway({
      PUBLIC_URL,
      OIDC_AUDIENCE: `${PUBLIC_URL},${OPAQUE_RESOURCE}`,
      OIDC_INTROSPECTION_URL: `${provider.issuer}/token/introspection`,
      OIDC_INTROSPECTION_CLIENT_ID: TestAuthorizationServer.CLIENT_ID,
      OIDC_INTROSPECTION_CLIENT_SECRET: TestAuthorizationServer.CLIENT_SECRET,
    });
  }, 30_000);

  afterAll(async () => {
    await gateway?.close();
    await provider?.stop();
  });

  const tools = (bearer: string) => fetch(gateway.http('/tools'), { headers: { Authorization: `Bearer ${bearer}` } });

  it('accepts an active opaque token on HTTP, at a WebSocket upgrade and over MCP, as the principal of its client', async () => {
    const token = await provider.clientCredentialsToken(OPAQUE_RESOURCE);
    expect(token.split('.')).toHaveLength(1); // opaque, not a JWT
    expect((await tools(token)).status).toBe(200);

    const socket = await TestSocket.open(gateway.ws('/utcp'), { headers: { Authorization: `Bearer ${token}` } });
    socket.send({ type: 'call', id: 'c1', tool: 'calculator', params: { a: 2, b: 3 } });
    expect(await socket.next()).toEqual({ type: 'result', id: 'c1', result: 5 });
    await socket.close();

    const client = new Client({ name: 'introspected', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.http('/mcp')), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
    try {
      expect((await client.callTool({ name: 'calculator', arguments: { a: 4, b: 5 } })).content).toEqual([{ type: 'text', text: '9' }]);
    } finally {
      await client.close();
    }
  });

  it('refuses with 401 invalid_token a token the server does not know, one for another audience, and one revoked before its first use', async () => {
    const unknown = await tools('an-opaque-token-nobody-issued');
    expect(unknown.status).toBe(401);
    expect(unknown.headers.get('www-authenticate')).toContain('invalid_token');

    const forAnother = await provider.clientCredentialsToken('http://another-service.test/opaque');
    expect((await tools(forAnother)).status).toBe(401);

    const revoked = await provider.clientCredentialsToken(OPAQUE_RESOURCE);
    await provider.revoke(revoked);
    expect((await tools(revoked)).status).toBe(401);
  });

  it('keeps an active answer (at most a minute): a token used again is not asked about again, so its revocation is seen only after that', async () => {
    const token = await provider.clientCredentialsToken(OPAQUE_RESOURCE);
    const statuses = await Promise.all(Array.from({ length: 20 }, async () => (await tools(token)).status));
    expect(new Set(statuses)).toEqual(new Set([200]));
    await provider.revoke(token);
    // The provider now answers `active: false`; the kept answer still stands.
    expect((await tools(token)).status).toBe(200);
  });
});
