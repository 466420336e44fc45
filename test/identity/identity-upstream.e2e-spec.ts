import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { RunningGateway, startGateway } from '../support/gateway';
import { TestAuthorizationServer } from '../support/oidc-provider';
import { freePort } from '../support/ports';
import { serversFile, upstreamIn } from '../support/upstreams';

/**
 * Upstream identity: the gateway authenticates to an upstream MCP server with OAuth client
 * credentials of its own. The upstream is a second gateway acting as an OAuth resource server for
 * the same real authorization server (its `/mcp` answers 401 with its protected resource metadata,
 * and accepts only tokens for its own audience), so the whole MCP authorization dance runs.
 */
/** The caller's static token at the first gateway: never the upstream's. */
const CALLER_TOKEN = 'caller-token-of-the-upstream-identity-tests';

describe('Upstream identity: OAuth client credentials towards an upstream MCP server', () => {
  let provider: TestAuthorizationServer;
  let upstream: RunningGateway;
  let upstreamUrl: string;
  const gateways: RunningGateway[] = [];
  const files: { remove(): void }[] = [];
  const clients: Client[] = [];

  /** A gateway whose upstream `secure` is the resource server, reached with `oauth`. */
  async function gatewayWith(oauth: Record<string, unknown>): Promise<RunningGateway> {
    const file = serversFile({ secure: { url: `${upstreamUrl}/mcp`, oauth } });
    files.push(file);
    const gateway = await startGateway({ AUTH_TOKENS: CALLER_TOKEN, MCP_SERVERS_FILE: file.path, MCP_UPSTREAM_CONNECT_TIMEOUT: 5 });
    gateways.push(gateway);
    return gateway;
  }

  async function mcpClientOf(gateway: RunningGateway): Promise<Client> {
    const client = new Client({ name: 'upstream-identity-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(gateway.http('/mcp')), { requestInit: { headers: { Authorization: `Bearer ${CALLER_TOKEN}` } } }),
    );
    clients.push(client);
    return client;
  }

  const credentials = () => ({ issuer: provider.issuer, clientId: TestAuthorizationServer.CLIENT_ID, clientSecret: TestAuthorizationServer.CLIENT_SECRET });

  beforeAll(async () => {
    const port = await freePort();
    upstreamUrl = `http://127.0.0.1:${port}`;
    // Tokens for the upstream's resource live 2 s, so the gateway must fetch new ones while connected.
    provider = await TestAuthorizationServer.start(`${upstreamUrl}/mcp`);
    upstream = await startGateway({ OIDC_ISSUERS: provider.issuer, PUBLIC_URL: upstreamUrl, OIDC_CLOCK_SKEW: 0 }, undefined, undefined, port);
  }, 30_000);

  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close()));
    await Promise.all(gateways.map((gateway) => gateway.close()));
    files.forEach((file) => file.remove());
    await upstream?.close();
    await provider?.stop();
  });

  it('refuses the gateway without a token, so the dance is needed', async () => {
    const answer = await fetch(`${upstreamUrl}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(answer.status).toBe(401);
    expect(answer.headers.get('www-authenticate')).toContain(`resource_metadata="${upstreamUrl}/.well-known/oauth-protected-resource/mcp"`);
  });

  it("finds the authorization server from the upstream's 401, fetches a token, and fetches another when it expires", async () => {
    const gateway = await gatewayWith(credentials());
    const status = await upstreamIn(gateway, 'secure', 'connected');
    expect(status.tools).toBeGreaterThan(0);
    const mcp = await mcpClientOf(gateway);
    const call = () => mcp.callTool({ name: 'secure.calculator', arguments: { a: 2, b: 3, operation: 'add' } });
    expect(JSON.stringify(await call())).toContain('5');

    // The first token has expired (2 s, no clock skew at the upstream): the upstream refuses it,
    // and the gateway's client fetches a new one and sends the call again.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const later = await call();
    expect(later.isError).toBeFalsy();
    expect(JSON.stringify(later)).toContain('5');
    expect((await upstreamIn(gateway, 'secure', 'connected')).failures).toBe(0);
  }, 30_000);

  it('reports a wrong client secret as a failed upstream, without the secret', async () => {
    const wrongSecret = 'not-the-secret-of-the-agent-client';
    const gateway = await gatewayWith({ ...credentials(), clientSecret: wrongSecret });
    const status = await upstreamIn(gateway, 'secure', 'failed');
    expect(status.last_error).toBe('could not connect: client authentication failed');
    expect(JSON.stringify(await (await fetch(gateway.http('/health'))).json())).not.toContain(wrongSecret);
  }, 30_000);

  it('never sends the secret to an authorization server other than the one configured', async () => {
    const gateway = await gatewayWith({ ...credentials(), issuer: 'http://127.0.0.1:9/elsewhere' });
    const status = await upstreamIn(gateway, 'secure', 'failed');
    expect(status.last_error).toMatch(
      /credentials are bound to "http:\/\/127\.0\.0\.1:9\/elsewhere" .*refusing to present them to a different authorization server/,
    );
  }, 30_000);
});
