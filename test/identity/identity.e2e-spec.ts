import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createHmac, createPublicKey } from 'crypto';
import { exportJWK, generateKeyPair, importJWK, type JWK, type JWTPayload, SignJWT } from 'jose';
import { createServer, type Server, type Socket } from 'net';
import type { AddressInfo } from 'net';
import { RunningGateway, startGateway } from '../support/gateway';
import { AuthFailed, EnvelopeClient } from '../support/mcp-envelope-client';
import { TestAuthorizationServer } from '../support/oidc-provider';
import { refusal, TestSocket } from '../support/test-socket';

const PUBLIC_URL = 'http://gateway.test';
const STATIC_TOKEN = 'static-secret-of-the-identity-tests';

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** An issuer that accepts connections and never answers: its metadata never arrives. */
async function silentIssuer(): Promise<{ url: string; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

describe('JWT access tokens from a real authorization server (oidc-provider)', () => {
  let provider: TestAuthorizationServer;
  let silent: Awaited<ReturnType<typeof silentIssuer>>;
  let gateway: RunningGateway;
  let output = '';
  let writes: jest.SpyInstance[];
  const seenTokens: string[] = [];

  /** A token signed with the provider's own key (claims the provider would not put), or with `key`. */
  async function sign(claims: JWTPayload, key: JWK = provider.keys[0], alg = 'RS256'): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    const token = await new SignJWT({ sub: 'agent', scope: 'tools:read', iat: now, exp: now + 300, iss: provider.issuer, aud: PUBLIC_URL, ...claims })
      .setProtectedHeader({ alg, kid: key.kid, typ: 'at+jwt' })
      .sign(await importJWK(key, alg));
    seenTokens.push(token);
    return token;
  }

  async function token(resource = PUBLIC_URL): Promise<string> {
    const value = await provider.clientCredentialsToken(resource);
    seenTokens.push(value);
    return value;
  }

  const get = (path: string, bearer?: string) => fetch(gateway.http(path), { headers: bearer === undefined ? {} : { Authorization: `Bearer ${bearer}` } });

  beforeAll(async () => {
    provider = await TestAuthorizationServer.start();
    silent = await silentIssuer();
    const capture = ((chunk: string | Uint8Array) => {
      output += chunk.toString();
      return true;
    }) as typeof process.stdout.write;
    writes = [jest.spyOn(process.stdout, 'write').mockImplementation(capture), jest.spyOn(process.stderr, 'write').mockImplementation(capture)];
    gateway = await startGateway({
      CLOUD_LOG_LEVEL: 'DEBUG',
      AUTH_TOKENS: STATIC_TOKEN,
      OIDC_ISSUERS: `${provider.issuer},${silent.url}`,
      PUBLIC_URL,
      // The gateway's defaults, and the provider's resource whose tokens live 2 s.
      OIDC_AUDIENCE: `${PUBLIC_URL},${PUBLIC_URL}/mcp,${PUBLIC_URL}/short-lived`,
      OIDC_CLOCK_SKEW: 1,
      OIDC_FETCH_TIMEOUT: 1,
      OIDC_JWKS_COOLDOWN: 0,
      OIDC_SCOPES: 'tools:read tools:call'.replace(' ', ','),
    });
  }, 30_000);

  afterAll(async () => {
    await gateway?.close();
    await silent?.close();
    await provider?.stop();
    for (const write of writes ?? []) write.mockRestore();
    for (const seen of seenTokens) {
      expect(output.includes(seen)).toBe(false);
      // Not even the signature part of one.
      const signature = seen.split('.')[2];
      if (signature.length > 16) expect(output.includes(signature)).toBe(false);
    }
  });

  describe('a client-credentials token (aud: the gateway)', () => {
    it('calls a tool over MCP Streamable HTTP with the official SDK client', async () => {
      const client = new Client({ name: 'identity-e2e', version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(gateway.http('/mcp')), { requestInit: { headers: { Authorization: `Bearer ${await token()}` } } }),
      );
      try {
        const sum = await client.callTool({ name: 'calculator', arguments: { a: 2, b: 3 } });
        expect(sum.isError).toBeFalsy();
        expect(JSON.stringify(sum.content)).toContain('5');
      } finally {
        await client.close();
      }
    });

    it('accepts a token for the MCP resource (aud: <PUBLIC_URL>/mcp) too', async () => {
      expect((await get('/tools', await token(`${PUBLIC_URL}/mcp`))).status).toBe(200);
    });

    it('opens the LLM gateway WebSocket on /', async () => {
      const socket = await TestSocket.open(gateway.ws('/'), { headers: { Authorization: `Bearer ${await token()}` } });
      socket.socket.close();
    });

    it("authenticates the MCP envelope's auth message and lists tools", async () => {
      const client = await EnvelopeClient.connect(gateway.ws('/mcp'), await token());
      try {
        const listed = await client.request('tools/list');
        expect(listed.tools.map((tool: { name: string }) => tool.name)).toContain('calculator');
      } finally {
        client.socket.close();
      }
    });

    it("authenticates UTCP's auth frame (once answered, calls go through)", async () => {
      const socket = await TestSocket.open(gateway.ws('/utcp'));
      try {
        socket.send({ type: 'auth', token: await token(), id: 'a1' });
        expect(await socket.next()).toEqual({ type: 'auth_ok', id: 'a1' });
        socket.send({ type: 'call', id: 'c1', tool: 'calculator', params: { a: 1, b: 2 } });
        expect(await socket.next()).toEqual({ type: 'result', id: 'c1', result: 3 });
      } finally {
        await socket.close();
      }
    });

    it('authenticates a JWT sent at the UTCP upgrade (its header), before the first call is read', async () => {
      const socket = await TestSocket.open(gateway.ws('/utcp'), { headers: { Authorization: `Bearer ${await token()}` } });
      try {
        socket.send({ type: 'call', id: 'c1', tool: 'calculator', params: { a: 1, b: 2 } });
        expect(await socket.next()).toEqual({ type: 'result', id: 'c1', result: 3 });
      } finally {
        await socket.close();
      }
    });

    it('refuses the UTCP upgrade of an expired JWT with 401', async () => {
      const expired = await sign({ exp: Math.floor(Date.now() / 1000) - 60 });
      expect(await refusal(TestSocket.open(gateway.ws('/utcp'), { headers: { Authorization: `Bearer ${expired}` } }))).toMatchObject({ status: 401 });
    });

    it('serves calls pipelined right behind a JWT auth frame, after it, in order', async () => {
      const socket = await TestSocket.open(gateway.ws('/utcp'));
      try {
        // The JWT is checked asynchronously (its keys may be fetched): the calls wait for it.
        socket.send({ type: 'auth', token: await token(), id: 'a1' });
        socket.send({ type: 'call', id: 'c1', tool: 'calculator', params: { a: 1, b: 2 } });
        socket.send({ type: 'call', id: 'c2', tool: 'calculator', params: { a: 3, b: 4 } });
        expect([await socket.next(), await socket.next(), await socket.next()]).toEqual([
          { type: 'auth_ok', id: 'a1' },
          { type: 'result', id: 'c1', result: 3 },
          { type: 'result', id: 'c2', result: 7 },
        ]);
      } finally {
        await socket.close();
      }
    });

    it('never runs a call pipelined behind a JWT auth frame that fails', async () => {
      const socket = await TestSocket.open(gateway.ws('/utcp'));
      try {
        socket.send({ type: 'auth', token: await sign({ exp: Math.floor(Date.now() / 1000) - 60 }), id: 'a1' });
        socket.send({ type: 'call', id: 'c1', tool: 'calculator', params: { a: 1, b: 2 } });
        expect(await socket.next()).toMatchObject({ type: 'error', id: 'a1', error: { code: 'FORBIDDEN' } });
        // A failed auth frame ends the connection (UTCP's rule here): the call is not answered, let alone run.
        await socket.expectSilence(300);
      } finally {
        await socket.close();
      }
    });

    it("refuses an invalid JWT in UTCP's auth frame with its error frame", async () => {
      const socket = await TestSocket.open(gateway.ws('/utcp'));
      try {
        socket.send({ type: 'auth', token: await sign({ exp: Math.floor(Date.now() / 1000) - 60 }), id: 'a1' });
        expect(await socket.next()).toMatchObject({ type: 'error', id: 'a1', error: { code: 'FORBIDDEN', message: expect.stringMatching(/expired/) } });
      } finally {
        await socket.close();
      }
    });

    it('authenticates on HTTP routes', async () => {
      expect((await get('/tools', await token())).status).toBe(200);
    });
  });

  it("makes one user of several clients one principal: that user's agent reaches the user's device, another user's does not", async () => {
    // The device's firmware and the user's assistant are different clients of the provider, with the same `sub`.
    const deviceToken = await sign({ sub: 'alice', client_id: 'speaker-firmware', scope: 'tools:read tools:call' });
    const agentToken = await sign({ sub: 'alice', client_id: 'home-assistant', scope: 'tools:read tools:call' });
    const strangerToken = await sign({ sub: 'bob', client_id: 'home-assistant', scope: 'tools:read tools:call' });
    const device = await TestSocket.open(gateway.ws('/'), { headers: { Authorization: `Bearer ${deviceToken}`, 'Device-Id': 'alice-kitchen' } });
    const agent = new Client({ name: 'home-assistant', version: '1.0.0' });
    try {
      expect(await device.next()).toMatchObject({ type: 'status', status: 'connected' });
      device.send({ type: 'register_tools', tools: [{ name: 'light_on', description: 'Turns the light on', parameters: { type: 'object', properties: {} } }] });
      expect(await device.next()).toMatchObject({ type: 'tools_registered', count: 1 });

      const devicesOf = async (bearer: string) =>
        ((await (await get('/devices', bearer)).json()) as { devices: { id: string }[] }).devices.map((entry) => entry.id);
      expect(await devicesOf(agentToken)).toEqual(['alice-kitchen']);
      expect(await devicesOf(strangerToken)).toEqual([]);

      await agent.connect(
        new StreamableHTTPClientTransport(new URL(gateway.http('/mcp')), { requestInit: { headers: { Authorization: `Bearer ${agentToken}` } } }),
      );
      expect((await agent.listTools()).tools.map((tool) => tool.name)).toContain('alice-kitchen__light_on');
      const call = agent.callTool({ name: 'alice-kitchen__light_on', arguments: {} });
      const callback = await device.next(5000);
      expect(callback).toMatchObject({ type: 'tool_callback', tool_name: 'light_on' });
      device.send({ type: 'tool_result', call_id: callback.call_id, success: true, result: 'on' });
      expect((await call).content).toEqual([{ type: 'text', text: 'on' }]);

      const pushed = await fetch(gateway.http('/devices/alice-kitchen/say'), {
        method: 'POST',
        headers: { Authorization: `Bearer ${strangerToken}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ text: 'Not yours.' }),
      });
      expect(pushed.status).toBe(404);
    } finally {
      await agent.close();
      await device.close();
    }
  });

  it('still takes the static tokens', async () => {
    expect((await get('/tools', STATIC_TOKEN)).status).toBe(200);
    const client = await EnvelopeClient.connect(gateway.ws('/mcp'), STATIC_TOKEN);
    client.socket.close();
  });

  describe('the MCP authorization flow (RFC 9728)', () => {
    it('answers a request without a token with 401 pointing at the protected resource metadata', async () => {
      const response = await fetch(gateway.http('/mcp'), {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
        }),
      });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${PUBLIC_URL}/.well-known/oauth-protected-resource/mcp"`);
      expect((await get('/tools')).headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${PUBLIC_URL}/.well-known/oauth-protected-resource"`);
    });

    it('adds error="invalid_token" when the token is refused, at an upgrade too', async () => {
      const response = await get('/tools', 'not-a-known-token');
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe(
        `Bearer resource_metadata="${PUBLIC_URL}/.well-known/oauth-protected-resource", error="invalid_token"`,
      );
      const refused = await refusal(TestSocket.open(gateway.ws('/'), { headers: { Authorization: 'Bearer not-a-known-token' } }));
      expect(refused.status).toBe(401);
      expect(refused.headers['www-authenticate']).toContain('error="invalid_token"');
    });

    it.each([
      ['/.well-known/oauth-protected-resource', PUBLIC_URL],
      ['/.well-known/oauth-protected-resource/mcp', `${PUBLIC_URL}/mcp`],
    ])('publishes %s', async (path, resource) => {
      const response = await get(path);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({
        resource,
        authorization_servers: [provider.issuer, silent.url],
        scopes_supported: ['tools:read', 'tools:call'],
        bearer_methods_supported: ['header'],
        resource_name: 'Gateway',
      });
    });
  });

  describe('refuses, with the protocol’s own answer', () => {
    const cases: [string, () => Promise<string>][] = [
      ['a token for another audience (a real one from the provider)', () => token('http://another-service.test')],
      [
        'a wrong signature (a key the provider does not have, its kid)',
        async () => {
          const { privateKey } = await generateKeyPair('RS256', { extractable: true });
          return sign({}, { ...(await exportJWK(privateKey)), kid: provider.keys[0].kid });
        },
      ],
      [
        'alg: none',
        async () => {
          const now = Math.floor(Date.now() / 1000);
          const value = `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ sub: 'agent', iss: provider.issuer, aud: PUBLIC_URL, iat: now, exp: now + 300 })}.`;
          seenTokens.push(value);
          return value;
        },
      ],
      [
        'HS256 signed with the public key',
        async () => {
          const pem = createPublicKey({ key: provider.keys[0] as never, format: 'jwk' })
            .export({ type: 'spki', format: 'pem' })
            .toString();
          const now = Math.floor(Date.now() / 1000);
          const input = `${b64({ alg: 'HS256', typ: 'JWT', kid: provider.keys[0].kid })}.${b64({ sub: 'agent', iss: provider.issuer, aud: PUBLIC_URL, iat: now, exp: now + 300 })}`;
          const value = `${input}.${createHmac('sha256', pem).update(input).digest('base64url')}`;
          seenTokens.push(value);
          return value;
        },
      ],
      ['a wrong issuer', () => sign({ iss: 'http://127.0.0.1:1/evil' })],
      ['an expired token', () => sign({ exp: Math.floor(Date.now() / 1000) - 60 })],
      ['a token not yet valid', () => sign({ nbf: Math.floor(Date.now() / 1000) + 120 })],
      ['a token without sub', () => sign({ sub: undefined })],
      ['a 1 MB token', async () => `${b64({ alg: 'RS256' })}.${'a'.repeat(1024 * 1024)}.sig`],
    ];

    it.each(cases)('%s: 401 on HTTP', async (_name, make) => {
      const value = await make();
      const response = await fetch(gateway.http('/tools'), { headers: { Authorization: `Bearer ${value}` } }).catch(() => undefined);
      // A 1 MB header is refused by Node's HTTP parser (431) before the gateway sees it.
      if (value.length > 100_000) expect(response === undefined || response.status === 431).toBe(true);
      else {
        expect(response!.status).toBe(401);
        expect(response!.headers.get('www-authenticate')).toContain('error="invalid_token"');
      }
    });

    it.each(cases)('%s: 401 at the WebSocket upgrade', async (_name, make) => {
      const value = await make();
      if (value.length > 100_000) return; // no HTTP client sends it; the envelope case below does
      expect((await refusal(TestSocket.open(gateway.ws('/'), { headers: { Authorization: `Bearer ${value}` } }))).status).toBe(401);
    });

    it.each(cases)('%s: auth failed in the MCP envelope', async (_name, make) => {
      const value = await make();
      const failure = await EnvelopeClient.connect(gateway.ws('/mcp'), value).then(
        (client) => (client.socket.close(), undefined),
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(AuthFailed);
    });
  });

  it('refuses a token whose issuer keys cannot be had within OIDC_FETCH_TIMEOUT, and does not stall static tokens meanwhile', async () => {
    const { privateKey } = await generateKeyPair('RS256', { extractable: true });
    const stalled = await sign({ iss: silent.url }, { ...(await exportJWK(privateKey)), kid: 'silent' });
    const started = Date.now();
    const slow = fetch(gateway.http('/tools'), { headers: { Authorization: `Bearer ${stalled}` } });
    const quickStart = Date.now();
    const quick = await get('/tools', STATIC_TOKEN);
    expect(quick.status).toBe(200);
    expect(Date.now() - quickStart).toBeLessThan(500);
    const refused = await slow;
    expect(refused.status).toBe(401);
    expect(Date.now() - started).toBeLessThan(3000);
    // Within the retry period the issuer is not asked again: refused at once.
    const again = Date.now();
    expect((await fetch(gateway.http('/tools'), { headers: { Authorization: `Bearer ${stalled}` } })).status).toBe(401);
    expect(Date.now() - again).toBeLessThan(500);
  });

  it('refuses a flood of invalid JWTs, each with 401, while a static token is answered at once', async () => {
    const { privateKey } = await generateKeyPair('RS256', { extractable: true });
    const forged = await sign({}, { ...(await exportJWK(privateKey)), kid: provider.keys[0].kid });
    const untrusted = await sign({ iss: 'http://127.0.0.1:1/nobody' });
    const flood = Array.from({ length: 200 }, (_, index) =>
      fetch(gateway.http('/tools'), { headers: { Authorization: `Bearer ${index % 2 ? forged : untrusted}` } }),
    );
    const quickStart = Date.now();
    expect((await get('/tools', STATIC_TOKEN)).status).toBe(200);
    expect(Date.now() - quickStart).toBeLessThan(2000);
    const statuses = await Promise.all(flood.map(async (response) => (await response).status));
    expect(new Set(statuses)).toEqual(new Set([401]));
  });

  it('accepts tokens signed with a new key after a rotation at the provider, and the old key while it is published', async () => {
    const before = await token();
    expect((await get('/tools', before)).status).toBe(200);
    const kid = await provider.rotate();
    const after = await token();
    expect(JSON.parse(Buffer.from(after.split('.')[0], 'base64url').toString()).kid).toBe(kid);
    expect((await get('/tools', after)).status).toBe(200);
    expect((await get('/tools', before)).status).toBe(200);
  });

  describe('a token that expires on a long-lived WebSocket', () => {
    it('closes the LLM gateway connection with 1008 and a reason saying so', async () => {
      const socket = await TestSocket.open(gateway.ws('/'), { headers: { Authorization: `Bearer ${await token(`${PUBLIC_URL}/short-lived`)}` } });
      const opened = Date.now();
      const closed = await socket.closed;
      expect(closed).toEqual({ code: 1008, reason: expect.stringMatching(/Access token expired/) });
      expect(Date.now() - opened).toBeLessThan(5000);
    });

    it('closes an MCP envelope session authenticated by message', async () => {
      const client = await EnvelopeClient.connect(gateway.ws('/mcp'), await token(`${PUBLIC_URL}/short-lived`));
      expect(await client.closed).toEqual({ code: 1008, reason: expect.stringMatching(/Access token expired/) });
    });
  });
});
