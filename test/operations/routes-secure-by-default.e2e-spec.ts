import { Controller, Get, Module, Post, RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { GATEWAY_OPTIONS } from '@nestjs/websockets/constants';
import { isPublic, Public } from '../../src/core/auth/route-access';
import { ProtocolGateway, ProtocolRouteOptions } from '../../src/core/ws/protocol-gateway.decorator';
import { CalculatorModule } from '../../src/examples/calculator/calculator.module';
import { RunningGateway, startGateway } from '../support/gateway';
import { TestSocket, UpgradeRefused } from '../support/test-socket';

const TOKEN = 'walker-token';

/** What a module author might add and forget to protect: no guard, no `@Public()`. */
@Controller('forgotten')
class ForgottenController {
  @Get()
  read() {
    return { secret: 'kept' };
  }

  @Post('open')
  @Public()
  open() {
    return { open: true };
  }
}

@ProtocolGateway({ protocol: 'forgotten', path: '/forgotten' })
class ForgottenGateway {}

@Module({ controllers: [ForgottenController], providers: [ForgottenGateway] })
class ForgottenModule {}

interface HttpRoute {
  method: string;
  path: string;
  open: boolean;
}

/** A path Nest knows, with its parameters filled in (`:tool` as a tool that exists, `*path` as two segments). */
function concrete(path: string): string {
  const joined = `/${path}`.replace(/\/+/g, '/').replace(/(.)\/$/, '$1');
  return joined.replace(/:[A-Za-z]+/g, 'calculator').replace(/\*[A-Za-z]+/g, 'some/file');
}

/** Every HTTP route of the app, from the controllers Nest discovered: each method and path, and whether it was declared public. */
function httpRoutes(gateway: RunningGateway): HttpRoute[] {
  const scanner = new MetadataScanner();
  const routes: HttpRoute[] = [];
  for (const wrapper of gateway.app.get(DiscoveryService).getControllers()) {
    const type = wrapper.metatype as (new (...args: never[]) => object) | undefined;
    if (!type) continue;
    const bases = [Reflect.getMetadata(PATH_METADATA, type) as string | string[]].flat();
    for (const name of scanner.getAllMethodNames(type.prototype)) {
      const handler = (type.prototype as Record<string, object>)[name];
      const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
      if (method === undefined) continue;
      const open = isPublic(handler) || isPublic(type);
      for (const base of bases) {
        for (const own of [Reflect.getMetadata(PATH_METADATA, handler) as string | string[]].flat()) {
          const verb = RequestMethod[method] === 'ALL' ? 'POST' : RequestMethod[method];
          routes.push({ method: verb, path: concrete(`${base}/${own}`), open });
        }
      }
    }
  }
  return routes;
}

/** Every WebSocket route the app serves, from the gateways Nest discovered. */
function webSocketRoutes(gateway: RunningGateway): ProtocolRouteOptions[] {
  return gateway.app
    .get(DiscoveryService)
    .getProviders()
    .map((wrapper) => wrapper.metatype && (Reflect.getMetadata(GATEWAY_OPTIONS, wrapper.metatype) as ProtocolRouteOptions | undefined))
    .filter((options): options is ProtocolRouteOptions => options?.path !== undefined && options.gateway !== undefined);
}

/**
 * Routes are closed unless declared open: every route Nest knows, the gateway's own and a module's
 * that forgot to protect its own, is refused without a token unless it is marked `@Public()`
 * (HTTP) or `public` (WebSocket).
 */
describe('every route needs a token unless it is declared public', () => {
  let gateway: RunningGateway;

  beforeAll(async () => {
    gateway = await startGateway({ AUTH_TOKENS: TOKEN, CONSOLE_ENABLED: true, MCP_WS_AUTH_TIMEOUT: 300, WS_AUTH_TIMEOUT: 0.3 }, [
      CalculatorModule,
      ForgottenModule,
    ]);
  });
  afterAll(() => gateway.close());

  it('refuses every HTTP route that is not @Public() with 401 when no token comes', async () => {
    const routes = httpRoutes(gateway);
    expect(routes.map(({ path }) => path)).toEqual(
      expect.arrayContaining([
        '/forgotten',
        '/forgotten/open',
        '/health',
        '/mcp',
        '/utcp',
        '/utcp/calculator',
        '/litemcp/calculator',
        '/tools',
        '/devices',
        '/metrics',
      ]),
    );
    const answers = await Promise.all(
      routes.map(async (route) => {
        const response = await fetch(gateway.http(route.path), {
          method: route.method,
          headers: route.method === 'GET' ? {} : { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
          body: route.method === 'GET' ? undefined : '{}',
        });
        await response.arrayBuffer();
        return { ...route, status: response.status };
      }),
    );
    const reachable = answers.filter(({ open, status }) => !open && status !== 401);
    expect(reachable).toEqual([]);
    const refusedThoughOpen = answers.filter(({ open, status }) => open && (status === 401 || status === 403));
    expect(refusedThoughOpen).toEqual([]);
  });

  it('lets the token through where the default guard stands', async () => {
    const response = await fetch(gateway.http('/forgotten'), { headers: { Authorization: `Bearer ${TOKEN}` } });
    expect([response.status, await response.json()]).toEqual([200, { secret: 'kept' }]);
    const refused = await fetch(gateway.http('/forgotten'));
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect((await fetch(gateway.http('/forgotten'), { headers: { Authorization: 'Bearer wrong' } })).status).toBe(403);
  });

  it('refuses every WebSocket upgrade that offers no token, or a wrong one, unless the route is public', async () => {
    const routes = webSocketRoutes(gateway);
    expect(routes.map(({ protocol }) => protocol)).toEqual(expect.arrayContaining(['llm', 'mcp', 'litemcp', 'utcp', 'forgotten']));
    for (const route of routes.filter((candidate) => !candidate.public)) {
      const url = gateway.ws(concrete(route.path));
      // A route that takes its token in a frame lets a client with none in, to send it; a credential offered at the upgrade is checked there.
      if (route.authByMessage) {
        // A route that takes its token in a frame lets a client with none in, to send it, and cuts it at the deadline.
        const waiting = await TestSocket.open(url);
        const cut = await Promise.race([waiting.closed.then(() => 'closed'), new Promise((resolve) => setTimeout(resolve, 5_000, 'still open'))]);
        expect([route.path, cut]).toEqual([route.path, 'closed']);
        continue;
      }
      for (const [headers, status] of [
        [{}, 401],
        [{ Authorization: 'Bearer wrong' }, 403],
      ] as const) {
        const refused = (await TestSocket.open(url, { headers }).catch((error: unknown) => error)) as UpgradeRefused;
        expect([route.path, headers, refused instanceof UpgradeRefused ? refused.status : String(refused)]).toEqual([route.path, headers, status]);
      }
    }
    const allowed = await TestSocket.open(gateway.ws('/forgotten'), { headers: { Authorization: `Bearer ${TOKEN}` } });
    await allowed.close();
  });
});
