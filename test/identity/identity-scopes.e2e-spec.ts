import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { mkdtempSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { RunningGateway, startGateway } from '../support/gateway';
import { TestAuthorizationServer } from '../support/oidc-provider';
import { TestSocket, UpgradeRefused } from '../support/test-socket';

const PUBLIC_URL = 'http://gateway.test';

/** Scopes become grants by the tokens file's `oidc` rules: the first rule that matches decides. */
const RULES = `
oidc:
  - name: callers
    match: {scope: "tools:call"}
    grant: {tools: ["*"]}
  - name: readers
    match: {scope: "tools:read", client_id: agent}
    grant: {tools: [get_current_time], protocols: [mcp]}
`;

describe('scopes and claims as grants (oidc rules of the tokens file)', () => {
  let provider: TestAuthorizationServer;
  let gateway: RunningGateway;
  let dir: string;

  beforeAll(async () => {
    provider = await TestAuthorizationServer.start();
    dir = mkdtempSync(join(tmpdir(), 'vtg-identity-'));
    writeFileSync(join(dir, 'tokens.yaml'), RULES, { mode: 0o600 });
    gateway = await startGateway({ OIDC_ISSUERS: provider.issuer, PUBLIC_URL, AUTH_TOKENS_FILE: join(dir, 'tokens.yaml') });
  }, 30_000);
  afterAll(async () => {
    await gateway?.close();
    await provider?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const mcpPost = (token: string, body: unknown) =>
    fetch(gateway.http('/mcp'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
    });

  it('lists only the tools the scope grants, and answers a call beyond them with 403 insufficient_scope and the scope to ask for', async () => {
    const token = await provider.clientCredentialsToken(PUBLIC_URL, 'tools:read');
    const client = new Client({ name: 'identity-scopes', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(gateway.http('/mcp')), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
    await client.connect(transport);
    try {
      expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['get_current_time']);
      expect((await client.callTool({ name: 'get_current_time', arguments: {} })).isError).toBeFalsy();
      const refused = await mcpPost(token, { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'calculator', arguments: { a: 1, b: 2 } } });
      expect(refused.status).toBe(403);
      expect(refused.headers.get('www-authenticate')).toBe(
        `Bearer resource_metadata="${PUBLIC_URL}/.well-known/oauth-protected-resource/mcp", error="insufficient_scope", scope="tools:read tools:call"`,
      );
      expect(await refused.json()).toMatchObject({ jsonrpc: '2.0', id: 7, error: { message: expect.stringContaining('calculator') } });
    } finally {
      await client.close();
    }
  });

  it('grants every tool to a token with the wider scope', async () => {
    const token = await provider.clientCredentialsToken(PUBLIC_URL, 'tools:call');
    const client = new Client({ name: 'identity-scopes', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.http('/mcp')), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
    try {
      expect((await client.callTool({ name: 'calculator', arguments: { a: 1, b: 2 } })).isError).toBeFalsy();
    } finally {
      await client.close();
    }
  });

  it("holds a rule's protocols: the readers' token may not open the LLM gateway", async () => {
    const token = await provider.clientCredentialsToken(PUBLIC_URL, 'tools:read');
    const refused = await TestSocket.open(gateway.ws('/'), { headers: { Authorization: `Bearer ${token}` } }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(UpgradeRefused);
    expect((refused as UpgradeRefused).status).toBe(403);
  });

  it('publishes the scopes of the rules', async () => {
    const metadata = (await (await fetch(gateway.http('/.well-known/oauth-protected-resource/mcp'))).json()) as { scopes_supported: string[] };
    expect(metadata.scopes_supported).toEqual(['tools:call', 'tools:read']);
  });
});
