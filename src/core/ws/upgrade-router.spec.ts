import { Logger } from '@nestjs/common';
import { createServer, Server } from 'http';
import type { AddressInfo } from 'net';
import { ClientOptions, WebSocket, WebSocketServer } from 'ws';
import { TestSocket, UpgradeRefused } from '../../../test/support/test-socket';
import { ConnectionCapsConfig, loadGatewayConfig } from '../../config/gateway-config';
import { OriginPolicy } from '../http/origin-policy';
import { CLOSE_MESSAGE_TOO_BIG, CLOSE_POLICY_VIOLATION, CLOSE_TRY_AGAIN_LATER, GatewayConnection } from './connection';
import { ConnectionRegistry } from './connection-registry';
import type { FrameDispatcher } from './frame-dispatcher';
import type { ProtocolGatewayHooks, ProtocolRouteOptions } from './protocol-gateway.decorator';
import type { RefusalReason } from './refusal-reason';
import { UpgradeContext, UpgradeGuard, UpgradeRefusedException } from './upgrade-guard';
import { CLOSE_INTERNAL_ERROR, compilePatterns, RouteCap, UpgradeRouter } from './upgrade-router';

const config = loadGatewayConfig({});

/** How one test route is made: its place, its guards, and what its fake gateway and dispatcher do. */
interface RouteSetup {
  protocol?: string;
  path?: string;
  /** The patterns it is served at; `path` alone by default. */
  patterns?: string[];
  guards?: UpgradeGuard[];
  cap?: RouteCap;
  authTimeoutMs?: number;
  /** Run by the dispatcher's `open`, after it is recorded. */
  onOpen?: (connection: GatewayConnection) => void;
  /** Run by the dispatcher's `dispatch` for each frame, after it is recorded. */
  onFrame?: (connection: GatewayConnection, text: string) => void;
  /** Run by the gateway's `onClose`, after it is recorded. */
  onClose?: (connection: GatewayConnection) => void;
  /** The gateway's `onAuthTimeout`; the gateway has none when omitted. */
  onAuthTimeout?: (connection: GatewayConnection, timeoutMs: number) => void;
}

/** What a test route's fake gateway and dispatcher were handed. */
interface RouteRecord {
  opened: GatewayConnection[];
  frames: { connection: GatewayConnection; text: string }[];
  closed: GatewayConnection[];
  authTimeouts: { connection: GatewayConnection; timeoutMs: number }[];
}

const httpServers: Server[] = [];
const wsServers: WebSocketServer[] = [];
const clients: TestSocket[] = [];

/** Listens on 127.0.0.1, on a port of the system's choosing; closed after the test. */
async function listening(server: Server): Promise<string> {
  httpServers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/**
 * An {@link UpgradeRouter} on a real HTTP server, with a real registry and origin policy, the
 * default connection caps (with `caps` on top) and one route per setup, whose gateway and
 * dispatcher are fakes that record what they are handed.
 */
async function gatewayWith(setups: RouteSetup[], options: { refusing?: () => boolean; caps?: Partial<ConnectionCapsConfig> } = {}) {
  const registry = new ConnectionRegistry();
  const refusals: RefusalReason[] = [];
  const caps = { ...config.connections, ...options.caps };
  const router = new UpgradeRouter(registry, options.refusing ?? (() => false), new OriginPolicy(config), caps, (reason) => refusals.push(reason));
  const records = setups.map((setup) => {
    const record: RouteRecord = { opened: [], frames: [], closed: [], authTimeouts: [] };
    const protocol = setup.protocol ?? 'test';
    const path = setup.path ?? '/test';
    const gateway: ProtocolGatewayHooks = {
      onClose: (connection) => {
        record.closed.push(connection);
        setup.onClose?.(connection);
      },
      onFrameError: () => undefined,
    };
    if (setup.onAuthTimeout) {
      const onAuthTimeout = setup.onAuthTimeout;
      gateway.onAuthTimeout = (connection, timeoutMs) => {
        record.authTimeouts.push({ connection, timeoutMs });
        onAuthTimeout(connection, timeoutMs);
      };
    }
    const dispatcher = {
      open: (connection: GatewayConnection) => {
        record.opened.push(connection);
        setup.onOpen?.(connection);
      },
      dispatch: (connection: GatewayConnection, raw: Buffer) => {
        record.frames.push({ connection, text: raw.toString() });
        setup.onFrame?.(connection, raw.toString());
        return undefined;
      },
    } as unknown as FrameDispatcher;
    const server = new WebSocketServer({ noServer: true });
    wsServers.push(server);
    router.add({
      options: { protocol, path } as ProtocolRouteOptions,
      patterns: compilePatterns(setup.patterns ?? [path]),
      server,
      guards: setup.guards ?? [],
      gateway,
      dispatcher,
      cap: setup.cap ?? { limit: 100, refusal: new UpgradeRefusedException(503, 'Route full') },
      authTimeoutMs: setup.authTimeoutMs,
    });
    return record;
  });
  const server = createServer();
  router.listen(server);
  const base = await listening(server);
  return { router, registry, refusals, route: records[0], routes: records, url: (path: string) => `${base}${path}` };
}

/** Opens a client socket; it is closed after the test. */
async function connect(url: string, options?: ClientOptions): Promise<TestSocket> {
  const client = await TestSocket.open(url, options);
  clients.push(client);
  return client;
}

/** The HTTP answer to an upgrade the router refuses: status, headers and JSON body; fails if the socket opens. */
async function refusal(url: string, options?: ClientOptions): Promise<{ status: number; headers: UpgradeRefused['headers']; body: unknown }> {
  const opened = await TestSocket.open(url, options).then(
    (client) => clients.push(client),
    (error: unknown) => error,
  );
  if (!(opened instanceof UpgradeRefused)) throw new Error(`Expected a refused upgrade at ${url}, got ${String(opened)}`);
  return { status: opened.status, headers: opened.headers, body: JSON.parse(opened.body) };
}

/** `promise`, or a failure naming `what` when it has not settled within `ms`. */
async function within<T>(promise: Promise<T>, what: string, ms = 800): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => (timer = setTimeout(() => reject(new Error(`Timed out waiting for ${what}`)), ms)));
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves once `condition` holds; fails naming `what` when it does not within `ms`. */
async function until(condition: () => boolean, what: string, ms = 800): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * The close frame the server sent `client`, without waiting for the server to finish the close
 * handshake: a socket the server has stopped reading never does before its grace period.
 */
async function closeFrameOf(client: TestSocket): Promise<{ code: number; reason: string }> {
  await until(() => client.socket.readyState === WebSocket.CLOSING, 'a close frame');
  client.socket.terminate();
  return within(client.closed, 'the close');
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A guard that authenticates the client named by the `as` query parameter, and lets anonymous ones through. */
const principalFromQuery: UpgradeGuard = {
  canUpgrade: (context) => {
    context.principal = context.url.searchParams.get('as') ?? undefined;
  },
};

describe('UpgradeRouter', () => {
  let loggedErrors: jest.SpyInstance;

  beforeAll(() => Logger.overrideLogger(false));

  beforeEach(() => {
    loggedErrors = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
  });

  afterEach(async () => {
    for (const client of clients.splice(0)) client.socket.terminate();
    for (const server of wsServers.splice(0)) {
      for (const socket of server.clients) socket.terminate();
      server.close();
    }
    await Promise.all(
      httpServers.splice(0).map(
        (server) =>
          new Promise((resolve) => {
            server.close(resolve);
            server.closeAllConnections();
          }),
      ),
    );
    jest.restoreAllMocks();
  });

  it('refuses upgrades with 503 while the gateway refuses them, and accepts them again after', async () => {
    let refusing = true;
    const { url, refusals, route } = await gatewayWith([{}], { refusing: () => refusing });
    const refused = await refusal(url('/test'));
    expect(refused.status).toBe(503);
    expect(refused.body).toEqual({ error: { status: 503, message: 'Server is shutting down' } });
    expect(refusals).toEqual(['shutdown']);
    expect(route.opened).toHaveLength(0);
    refusing = false;
    await connect(url('/test'));
    expect(route.opened).toHaveLength(1);
  });

  it('refuses an upgrade from a page the origin policy refuses with 403', async () => {
    const { url, refusals } = await gatewayWith([{}]);
    const refused = await refusal(url('/test'), { origin: 'http://evil.example' });
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ error: { status: 403, message: 'Origin "http://evil.example" is not allowed (add it to ALLOWED_ORIGINS)' } });
    expect(refusals).toEqual(['origin']);
  });

  it('refuses an upgrade to a path no route serves with 404', async () => {
    const { url, refusals } = await gatewayWith([{}]);
    const refused = await refusal(url('/nowhere?x=1'));
    expect(refused.status).toBe(404);
    expect(refused.body).toEqual({ error: { status: 404, message: 'No WebSocket endpoint at /nowhere' } });
    expect(refusals).toEqual(['other']);
  });

  it('refuses an upgrade whose path parameter does not decode with 400', async () => {
    const { url, refusals, route } = await gatewayWith([{ protocol: 'litemcp', path: '/litemcp/:tool' }]);
    const refused = await refusal(url('/litemcp/%E0%A4%A'));
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({ error: { status: 400, message: 'Malformed request path' } });
    expect(refusals).toEqual(['other']);
    expect(route.opened).toHaveLength(0);
  });

  it('routes by pattern and hands the decoded path parameters to the guards and the connection', async () => {
    const seen: UpgradeContext[] = [];
    const { url, routes } = await gatewayWith([
      { protocol: 'test', path: '/test' },
      {
        protocol: 'litemcp',
        path: '/litemcp/:tool',
        patterns: ['/litemcp/:tool', '/lm/:tool'],
        guards: [{ canUpgrade: (context) => void seen.push(context) }],
      },
    ]);
    await connect(url('/litemcp/get%20weather'));
    await connect(url('/lm/caf%C3%A9'));
    const [plain, litemcp] = routes;
    expect(plain.opened).toHaveLength(0);
    expect(seen.map(({ params, protocol, url: { pathname } }) => ({ params, protocol, pathname }))).toEqual([
      { params: { tool: 'get weather' }, protocol: 'litemcp', pathname: '/litemcp/get%20weather' },
      { params: { tool: 'café' }, protocol: 'litemcp', pathname: '/lm/caf%C3%A9' },
    ]);
    expect(litemcp.opened.map(({ params, protocol, route }) => ({ params, protocol, route }))).toEqual([
      { params: { tool: 'get weather' }, protocol: 'litemcp', route: '/litemcp/:tool' },
      { params: { tool: 'café' }, protocol: 'litemcp', route: '/litemcp/:tool' },
    ]);
  });

  it("answers a guard's refusal with its status, message and headers, and runs no later guard", async () => {
    const later = jest.fn();
    const refuse: UpgradeGuard = {
      canUpgrade: () => {
        throw new UpgradeRefusedException(401, 'Missing bearer token', { 'WWW-Authenticate': 'Bearer realm="gateway"' });
      },
    };
    const { url, refusals, registry, route } = await gatewayWith([{ guards: [refuse, { canUpgrade: later }] }]);
    const refused = await refusal(url('/test'));
    expect(refused.status).toBe(401);
    expect(refused.headers['www-authenticate']).toBe('Bearer realm="gateway"');
    expect(refused.body).toEqual({ error: { status: 401, message: 'Missing bearer token' } });
    expect(refusals).toEqual(['auth']);
    expect(later).not.toHaveBeenCalled();
    expect(route.opened).toHaveLength(0);
    expect(registry.size).toBe(0);
  });

  it('answers a guard that fails with anything else with 500 "Internal error", logs it, and keeps serving', async () => {
    const failing: UpgradeGuard = {
      canUpgrade: async (context) => {
        if (context.url.searchParams.has('fail')) throw new TypeError('guard bug');
      },
    };
    const { url, refusals, route } = await gatewayWith([{ guards: [failing] }]);
    const refused = await refusal(url('/test?fail'));
    expect(refused.status).toBe(500);
    expect(refused.body).toEqual({ error: { status: 500, message: 'Internal error' } });
    expect(refusals).toEqual(['other']);
    expect(loggedErrors).toHaveBeenCalledWith(expect.stringContaining('Upgrade guard failed on /test: TypeError: guard bug'));
    await connect(url('/test'));
    expect(route.opened).toHaveLength(1);
  });

  it('runs the guards in order, each seeing the principal an earlier one set, and starts the connection with it', async () => {
    const order: string[] = [];
    const first: UpgradeGuard = {
      canUpgrade: async (context) => {
        await sleep(10);
        order.push('first');
        context.principal = 'alice';
      },
    };
    const second: UpgradeGuard = { canUpgrade: (context) => void order.push(`second saw ${context.principal}`) };
    const { url, route, registry } = await gatewayWith([{ guards: [first, second] }]);
    await connect(url('/test'));
    expect(order).toEqual(['first', 'second saw alice']);
    expect(route.opened[0].principal).toBe('alice');
    expect(registry.count('test')).toBe(1);
  });

  it('completes the handshake of a refusal with a close code, and closes the socket with that code and message', async () => {
    const full: UpgradeGuard = {
      canUpgrade: () => {
        throw new UpgradeRefusedException(503, 'Too many llm connections: at most 0 (CLOUD_MAX_CONNECTIONS)', {}, CLOSE_TRY_AGAIN_LATER);
      },
    };
    const { url, refusals, registry, route } = await gatewayWith([{ guards: [full] }]);
    const client = await connect(url('/test'));
    expect(await within(client.closed, 'the close')).toEqual({
      code: CLOSE_TRY_AGAIN_LATER,
      reason: 'Too many llm connections: at most 0 (CLOUD_MAX_CONNECTIONS)',
    });
    expect(refusals).toEqual(['cap']);
    expect(route.opened).toHaveLength(0);
    expect(registry.size).toBe(0);
  });

  it("refuses an authenticated upgrade with the route's cap refusal once the protocol holds cap.limit authenticated connections", async () => {
    const cap = { limit: 1, refusal: new UpgradeRefusedException(503, 'Too many test connections: at most 1 (TEST_MAX)', { 'Retry-After': '1' }) };
    const { url, refusals, registry } = await gatewayWith([{ guards: [principalFromQuery], cap }]);
    await connect(url('/test'));
    const alice = await connect(url('/test?as=alice'));
    const refused = await refusal(url('/test?as=bob'));
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.body).toEqual({ error: { status: 503, message: 'Too many test connections: at most 1 (TEST_MAX)' } });
    expect(refusals).toEqual(['cap']);
    await alice.close();
    await until(() => registry.count('test') === 0, 'alice to be forgotten');
    await connect(url('/test?as=bob'));
    expect(registry.count('test')).toBe(1);
  });

  it("accepts and closes with the cap's close code when the route's cap refusal has one", async () => {
    const cap = { limit: 1, refusal: new UpgradeRefusedException(503, 'Too many test connections', {}, CLOSE_TRY_AGAIN_LATER) };
    const { url, refusals, registry, route } = await gatewayWith([{ guards: [principalFromQuery], cap }]);
    await connect(url('/test?as=alice'));
    const bob = await connect(url('/test?as=bob'));
    expect(await within(bob.closed, 'the close')).toEqual({ code: CLOSE_TRY_AGAIN_LATER, reason: 'Too many test connections' });
    expect(refusals).toEqual(['cap']);
    expect(route.opened).toHaveLength(1);
    expect(registry.count('test')).toBe(1);
  });

  it("refuses a principal proved by an auth frame past the route's cap, and counts one it admits", async () => {
    const cap = { limit: 1, refusal: new UpgradeRefusedException(503, 'Too many test connections: at most 1 (TEST_MAX)') };
    const answers: (string | undefined)[] = [];
    const { url, registry, route } = await gatewayWith([
      { guards: [principalFromQuery], cap, onFrame: (connection, text) => void answers.push(connection.authenticate(text)) },
    ]);
    const anonymous = await connect(url('/test'));
    anonymous.send('bob');
    await until(() => answers.length === 1, 'the auth frame');
    expect(answers).toEqual([undefined]);
    expect(registry.count('test')).toBe(1);
    const late = await connect(url('/test'));
    late.send('carol');
    await until(() => answers.length === 2, 'the second auth frame');
    expect(answers[1]).toBe('Too many test connections: at most 1 (TEST_MAX)');
    expect(route.opened[1].principal).toBeUndefined();
    expect(registry.count('test')).toBe(1);
  });

  it('refuses an upgrade past the caps every route shares with their status and Retry-After: 1', async () => {
    const { url, refusals } = await gatewayWith([{}], { caps: { unauthenticated: 1 } });
    await connect(url('/test'));
    const refused = await refusal(url('/test'));
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.body).toEqual({ error: { status: 503, message: 'Too many connections waiting to authenticate: at most 1 (WS_MAX_UNAUTHENTICATED)' } });
    expect(refusals).toEqual(['cap']);
  });

  it('closes an unauthenticated socket with 1009 once it has sent more than WS_UNAUTHENTICATED_MAX_BYTES in all', async () => {
    const { url, route } = await gatewayWith([{}], { caps: { unauthenticatedMaxBytes: 1024 } });
    const client = await connect(url('/test'));
    for (let sent = 1; sent <= 2; sent += 1) {
      client.send('x'.repeat(400));
      await until(() => route.frames.length === sent, `frame ${sent}`);
    }
    expect(route.opened[0].isOpen).toBe(true);
    client.send('x'.repeat(400));
    expect(await closeFrameOf(client)).toEqual({
      code: CLOSE_MESSAGE_TOO_BIG,
      reason: 'Over 1024 bytes sent before authenticating (WS_UNAUTHENTICATED_MAX_BYTES)',
    });
    expect(route.opened[0].isOpen).toBe(false);
  });

  it('lets a socket that authenticated by its first frame send more than WS_UNAUTHENTICATED_MAX_BYTES after', async () => {
    const { url, route, registry } = await gatewayWith([{ onFrame: (connection, text) => connection.principal ?? connection.authenticate(text) }], {
      caps: { unauthenticatedMaxBytes: 1024 },
    });
    const client = await connect(url('/test'));
    client.send('alice');
    for (let i = 0; i < 3; i += 1) client.send('x'.repeat(1000));
    await until(() => route.frames.length === 4, 'every frame to be dispatched');
    expect(route.opened[0].principal).toBe('alice');
    expect(route.opened[0].isOpen).toBe(true);
    expect(registry.count('test')).toBe(1);
  });

  it("calls the gateway's onAuthTimeout when no principal is settled within authTimeoutMs", async () => {
    const started = Date.now();
    const { url, route } = await gatewayWith([
      { authTimeoutMs: 100, onAuthTimeout: (connection, ms) => connection.close(4000, `No auth frame within ${ms} ms`) },
    ]);
    const client = await connect(url('/test'));
    expect(await within(client.closed, 'the close')).toEqual({ code: 4000, reason: 'No auth frame within 100 ms' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(95);
    expect(route.authTimeouts).toHaveLength(1);
    expect(route.authTimeouts[0].connection).toBe(route.opened[0]);
    expect(route.authTimeouts[0].timeoutMs).toBe(100);
  });

  it('closes with 1008 when no principal is settled within authTimeoutMs and the gateway has no onAuthTimeout', async () => {
    const { url } = await gatewayWith([{ authTimeoutMs: 100 }]);
    const client = await connect(url('/test'));
    expect(await within(client.closed, 'the close')).toEqual({ code: CLOSE_POLICY_VIOLATION, reason: 'Authentication timeout: no auth frame within 100 ms' });
  });

  it('never times out a socket that authenticated by frame or at its upgrade, or that closed first', async () => {
    const { url, route } = await gatewayWith([
      {
        authTimeoutMs: 100,
        guards: [principalFromQuery],
        onFrame: (connection, text) => connection.authenticate(text),
        onAuthTimeout: (connection) => connection.close(4000, 'Too late'),
      },
    ]);
    const byFrame = await connect(url('/test'));
    byFrame.send('alice');
    const atUpgrade = await connect(url('/test?as=bob'));
    const gone = await connect(url('/test'));
    await gone.close();
    await until(() => route.closed.length === 1, 'the closed socket to be let go');
    await sleep(200);
    expect(route.authTimeouts).toEqual([]);
    expect([byFrame, atUpgrade].map((client) => client.socket.readyState)).toEqual([WebSocket.OPEN, WebSocket.OPEN]);
  });

  it('registers an accepted connection, opens it, dispatches its frames, and on close forgets it and lets it go once', async () => {
    const { url, route, registry } = await gatewayWith([{}]);
    const client = await connect(url('/test'));
    expect(route.opened).toHaveLength(1);
    const [connection] = route.opened;
    expect(registry.list('test')).toEqual([connection]);
    client.send('first');
    client.socket.send(Buffer.from('second'));
    await until(() => route.frames.length === 2, 'both frames');
    expect(route.frames.map(({ text }) => text)).toEqual(['first', 'second']);
    expect(route.frames.every((frame) => frame.connection === connection)).toBe(true);
    await client.close();
    await until(() => route.closed.length > 0, 'onClose');
    await sleep(20);
    expect(route.closed).toHaveLength(1);
    expect(route.closed[0]).toBe(connection);
    expect(registry.size).toBe(0);
  });

  it('drops the frames of a connection the gateway has begun to close', async () => {
    const { url, route } = await gatewayWith([{ onFrame: (connection) => connection.close(1000, 'Done') }]);
    const client = await connect(url('/test'));
    client.send('first');
    client.send('second');
    client.send('third');
    expect(await within(client.closed, 'the close')).toEqual({ code: 1000, reason: 'Done' });
    expect(route.frames.map(({ text }) => text)).toEqual(['first']);
  });

  it('logs an onClose that throws instead of throwing, and still forgets the connection', async () => {
    const { url, route, registry } = await gatewayWith([
      {
        onClose: () => {
          throw new Error('cleanup failed');
        },
      },
    ]);
    const client = await connect(url('/test'));
    await client.close();
    await until(() => route.closed.length === 1, 'onClose');
    expect(registry.size).toBe(0);
    expect(loggedErrors).toHaveBeenCalledWith(expect.stringContaining('test connection close failed: Error: cleanup failed'));
  });

  it('closes the socket with 1011 "Internal error" when the dispatcher cannot open the connection', async () => {
    const { url, route, registry } = await gatewayWith([
      {
        onOpen: () => {
          throw new Error('onOpen failed');
        },
      },
    ]);
    const client = await connect(url('/test'));
    expect(await within(client.closed, 'the close')).toEqual({ code: CLOSE_INTERNAL_ERROR, reason: 'Internal error' });
    expect(loggedErrors).toHaveBeenCalledWith(expect.stringContaining('test connection setup failed: Error: onOpen failed'));
    await until(() => route.closed.length === 1 && registry.size === 0, 'the connection to be let go');
  });

  it('serves a route on a further server at its own patterns, and names a route nobody serves', async () => {
    const { router, route } = await gatewayWith([{}]);
    const extra = createServer();
    router.serveOn(extra, '/test', ['/extra/:id']);
    const base = await listening(extra);
    await connect(`${base}/extra/7`);
    expect(route.opened.map(({ params, route: path }) => ({ params, path }))).toEqual([{ params: { id: '7' }, path: '/test' }]);
    expect((await refusal(`${base}/test`)).status).toBe(404);
    expect(() => router.serveOn(createServer(), '/nope')).toThrow('No WebSocket gateway serves route "/nope"');
  });
});
