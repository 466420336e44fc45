import { ChildProcessWithoutNullStreams, spawn } from 'child_process';
import type { JWK } from 'jose';
import { join } from 'path';
import { createInterface } from 'readline';

/**
 * A real authorization server (`oidc-provider`, in a process of its own: it is ESM only) for
 * the identity tests; see oidc-test-provider.mjs. Plain HTTP on 127.0.0.1, issuer
 * `http://127.0.0.1:<port>`, client `agent` with client credentials and resource indicators.
 */
export class TestAuthorizationServer {
  static readonly CLIENT_ID = 'agent';
  static readonly CLIENT_SECRET = 'agent-secret-of-the-tests';

  private readonly lines: string[] = [];
  private readonly waiters: ((line: string) => void)[] = [];

  private constructor(
    private readonly child: ChildProcessWithoutNullStreams,
    readonly issuer: string,
    /** The provider's signing keys, private parts included, newest first. */
    public keys: JWK[],
  ) {}

  /** `shortLived`: a resource whose tokens live 2 s (besides those ending in /short-lived). */
  static async start(shortLived = ''): Promise<TestAuthorizationServer> {
    const child = spawn(process.execPath, [join(__dirname, 'oidc-test-provider.mjs')], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, OIDC_TEST_SHORT_LIVED: shortLived },
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const lines = createInterface({ input: child.stdout });
    const first = await new Promise<string>((resolve, reject) => {
      lines.once('line', resolve);
      child.once('exit', (code) => reject(new Error(`oidc-provider exited (${code}): ${stderr}`)));
    });
    const { issuer, keys } = JSON.parse(first) as { issuer: string; keys: JWK[] };
    const server = new TestAuthorizationServer(child, issuer, keys);
    lines.on('line', (line) => {
      if (!line.startsWith('rotated ')) return; // the provider's notices
      const waiter = server.waiters.shift();
      if (waiter) waiter(line);
      else server.lines.push(line);
    });
    return server;
  }

  /** A client-credentials access token for `resource` (RFC 8707), with `scope`. */
  async clientCredentialsToken(resource: string, scope = 'tools:read tools:call'): Promise<string> {
    const response = await fetch(`${this.issuer}/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${TestAuthorizationServer.CLIENT_ID}:${TestAuthorizationServer.CLIENT_SECRET}`).toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'client_credentials', resource, scope }),
    });
    const body = (await response.json()) as { access_token?: string; error?: string };
    if (!body.access_token) throw new Error(`No token: ${JSON.stringify(body)}`);
    return body.access_token;
  }

  /** Revokes `token` at the provider (RFC 7009): its introspection answers `active: false` from then on. */
  async revoke(token: string): Promise<void> {
    const response = await fetch(`${this.issuer}/token/revocation`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${TestAuthorizationServer.CLIENT_ID}:${TestAuthorizationServer.CLIENT_SECRET}`).toString('base64')}`,
      },
      body: new URLSearchParams({ token }),
    });
    if (!response.ok) throw new Error(`Revocation answered ${response.status}`);
  }

  /** Puts a new signing key first at the provider (the old one stays published). */
  async rotate(): Promise<string> {
    this.child.stdin.write('rotate\n');
    const line = this.lines.shift() ?? (await new Promise<string>((resolve) => this.waiters.push(resolve)));
    const kid = line.replace(/^rotated /, '');
    return kid;
  }

  async stop(): Promise<void> {
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.stdin.end();
    await exited;
  }
}
