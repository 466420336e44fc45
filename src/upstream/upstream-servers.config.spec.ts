import { loadGatewayConfig } from '../config/gateway-config';
import { InvalidConfigurationError } from '../config/environment';
import { parseMcpServers } from './upstream-servers.config';

const defaults = loadGatewayConfig({ MCP_UPSTREAM_CONNECT_TIMEOUT: '20', MCP_UPSTREAM_CALL_TIMEOUT: '15' }).mcp.upstream;
const parse = (servers: unknown) => parseMcpServers({ mcpServers: servers }, defaults, 'mcp.json');

describe('the MCP servers file', () => {
  it("reads the desktop clients' format, with the gateway's defaults filled in", () => {
    expect(
      parse({
        files: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '/data'], env: { DEBUG: '1' } },
        search: { url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer abc' }, autoApprove: ['search'] },
      }),
    ).toEqual([
      {
        name: 'files',
        transport: 'stdio',
        command: 'npx',
        args: ['-y', '@modelcontextprotocol/server-filesystem', '/data'],
        env: { DEBUG: '1' },
        cwd: undefined,
        prefix: 'files.',
        disabled: false,
        connectTimeoutMs: 20_000,
        callTimeoutMs: 15_000,
      },
      {
        name: 'search',
        transport: 'streamable-http',
        url: new URL('https://mcp.example.com/mcp'),
        headers: { Authorization: 'Bearer abc' },
        sseFallback: true,
        prefix: 'search.',
        disabled: false,
        connectTimeoutMs: 20_000,
        callTimeoutMs: 15_000,
      },
    ]);
  });

  it("takes the gateway's own fields: prefix, disabled, timeouts in seconds, and the transport by type", () => {
    const [local, sse, http] = parse({
      local: { command: 'node', args: ['server.js'], cwd: '/srv', prefix: '', disabled: true, connectTimeout: 5, callTimeout: 0.5 },
      old: { type: 'sse', url: 'http://127.0.0.1:3001/sse' },
      modern: { type: 'http', url: 'http://127.0.0.1:3000/mcp' },
    });
    expect(local).toMatchObject({ prefix: '', disabled: true, cwd: '/srv', connectTimeoutMs: 5000, callTimeoutMs: 500 });
    expect(sse).toMatchObject({ transport: 'sse', sseFallback: false });
    expect(http).toMatchObject({ transport: 'streamable-http', sseFallback: false });
    expect(parse({ s: { type: 'streamableHttp', url: 'http://h/mcp' } })[0]).toMatchObject({ transport: 'streamable-http' });
    expect(parse({ s: { type: 'stdio', command: 'x' } })[0]).toMatchObject({ transport: 'stdio' });
  });

  it('takes OAuth client credentials for a remote server', () => {
    const oauth = { issuer: 'https://login.example.com/realms/tools', clientId: 'gateway', clientSecret: 'secret-of-the-gateway', scope: 'search:read' };
    expect(parse({ search: { url: 'https://search.example.com/mcp', oauth } })[0]).toMatchObject({ oauth });
  });

  it('accepts an empty list', () => {
    expect(parse({})).toEqual([]);
  });

  it.each([
    [{ a: 'npx server' }, 'server "a": must be an object with command or url'],
    [{ a: { url: 'http://h/mcp', args: ['x'] } }, 'server "a": args applies only to a command, not to a url'],
    [{ a: { command: 'x', headers: { A: 'b' } } }, 'server "a": headers apply only to a url, not to a command'],
    [{ a: { command: 'x', oauth: { issuer: 'http://as', clientId: 'c', clientSecret: 's' } } }, 'server "a": oauth applies only to a url, not to a command'],
    [
      { a: { url: 'http://h/mcp', oauth: { issuer: 'http://as', clientId: 'c' } } },
      'server "a": oauth.clientSecret should not be empty; oauth.clientSecret must be a string',
    ],
    [{ a: { url: 'http://h/mcp', oauth: { issuer: 'login', clientId: 'c', clientSecret: 's' } } }, 'server "a": oauth.issuer must be an http(s) URL'],
    [{ a: { url: 'http://h/mcp', oauth: 'secret' } }, 'server "a": oauth must be an object'],
    [{ a: { type: 'stdio', url: 'http://h/mcp' } }, 'server "a": type "stdio" needs command, not url'],
    [
      { a: { type: 'websocket', url: 'ws://h' } },
      'server "a": type must be one of stdio, http, streamable-http, streamableHttp, sse; url must be an http(s) URL',
    ],
    [{ a: { command: '' } }, 'server "a": command should not be empty'],
    [{ a: { command: 'x', callTimeout: 0 } }, 'server "a": callTimeout must not be less than 0.01'],
    [{ a: { command: 'x', disabled: 'yes' } }, 'server "a": disabled must be a boolean value'],
    [{ a: { command: 'x', prefix: 'p'.repeat(33) } }, 'server "a": prefix must be shorter than or equal to 32 characters'],
    [{ ['x'.repeat(65)]: { command: 'x' } }, `server "${'x'.repeat(65)}": a server name must have 1 to 64 characters`],
  ])('refuses %j, naming the file and the entry', (servers, problem) => {
    expect(() => parse(servers)).toThrow(InvalidConfigurationError);
    expect(() => parse(servers)).toThrow(`mcp.json: ${problem}`);
  });

  it('refuses a document without an mcpServers object', () => {
    for (const document of [null, [], { mcpServers: [] }, { servers: {} }]) {
      expect(() => parseMcpServers(document, defaults, 'mcp.json')).toThrow('mcp.json: must be a JSON object with an "mcpServers" object');
    }
  });
});
