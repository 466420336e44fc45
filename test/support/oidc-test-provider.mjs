// A real OAuth 2.1 / OpenID Connect authorization server for the identity tests: oidc-provider
// (certified, ESM only, hence its own process), on 127.0.0.1:<free port>, plain HTTP (a test
// issuer). Client credentials with resource indicators (RFC 8707): access tokens are JWTs
// (RS256) whose `aud` is the requested resource, opaque for a resource ending in /opaque
// (introspected at /token/introspection; revoked at /token/revocation). Prints one JSON line on stdout once listening:
// {issuer, keys: [private JWK...]} (the test signs tokens the provider would not, with its key).
// A resource ending in /short-lived, or named by OIDC_TEST_SHORT_LIVED, gets tokens that live 2 s.
// Reads commands on stdin: `rotate` puts a new signing key first (the old one stays published)
// and answers `rotated <kid>`.
import { generateKeyPair, exportJWK } from 'jose';
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import Provider from 'oidc-provider';

async function newKey() {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { ...(await exportJWK(privateKey)), kid: randomUUID(), alg: 'RS256', use: 'sig' };
}

let keys = [await newKey()];
let handler;
let provider;
// The login and consent page, answered at once: user `alice` approves what the client asked for
// (so the MCP SDK client's authorization code flow runs without a browser).
async function approve(req, res) {
  try {
    const details = await provider.interactionDetails(req, res);
    const { params } = details;
    const grant = new provider.Grant({ accountId: 'alice', clientId: params.client_id });
    const scopes = String(params.scope ?? '');
    // The provider lists the tools scopes among its own, so consent covers them both ways.
    grant.addOIDCScope(scopes);
    if (params.resource) for (const resource of [].concat(params.resource)) grant.addResourceScope(resource, scopes);
    const grantId = await grant.save();
    await provider.interactionFinished(req, res, { login: { accountId: 'alice' }, consent: { grantId } }, { mergeWithLastSubmission: false });
  } catch (error) {
    res.statusCode = 500;
    res.end(String(error));
  }
}
const server = createServer((req, res) => (req.url.startsWith('/interaction/') ? approve(req, res) : handler(req, res)));
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

function build() {
  provider = new Provider(issuer, {
    jwks: { keys },
    clients: [
      {
        client_id: 'agent',
        client_secret: 'agent-secret-of-the-tests',
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
        scope: 'tools:read tools:call',
      },
      {
        // A public client with PKCE, as the MCP SDK client is.
        client_id: 'mcp-desktop',
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code'],
        response_types: ['code'],
        redirect_uris: ['http://127.0.0.1/callback'],
        scope: 'openid tools:read tools:call',
      },
    ],
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
    scopes: ['openid', 'tools:read', 'tools:call'],
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, resource) => ({
          scope: 'tools:read tools:call',
          audience: resource,
          accessTokenTTL: resource.endsWith('/short-lived') || resource === process.env.OIDC_TEST_SHORT_LIVED ? 2 : 300,
          // A resource ending in /opaque gets opaque tokens, which its server must introspect (RFC 7662).
          accessTokenFormat: resource.endsWith('/opaque') ? 'opaque' : 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },
  });
  provider.proxy = false;
  handler = provider.callback();
}
build();

process.stdout.write(`${JSON.stringify({ issuer, keys })}\n`);

let buffered = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', async (chunk) => {
  buffered += chunk;
  let newline;
  while ((newline = buffered.indexOf('\n')) >= 0) {
    const command = buffered.slice(0, newline).trim();
    buffered = buffered.slice(newline + 1);
    if (command === 'rotate') {
      const key = await newKey();
      keys = [key, ...keys];
      build();
      process.stdout.write(`rotated ${key.kid}\n`);
    }
  }
});
process.stdin.on('end', () => process.exit(0));
