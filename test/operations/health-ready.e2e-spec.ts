import { Module } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { DrainService } from '../../src/core/lifecycle/drain.service';
import { HealthChecks } from '../../src/health/health-checks';
import { RunningGateway, startGateway } from '../support/gateway';
import { LlmStack, startLlmStack } from '../support/llm-stack';
import { freePort } from '../support/ports';
import { TEST_REDIS_URL, uniquePrefix } from '../support/redis';
import { ScriptedLlm } from '../support/scripted-llm';
import { serversFile, until } from '../support/upstreams';

async function get(gateway: RunningGateway, path: string): Promise<{ status: number; body: any }> {
  const response = await fetch(gateway.http(path));
  return { status: response.status, body: await response.json() };
}

/** A user's module with a check of its own, on both endpoints, down while `failing` is set. */
const ledger = { failing: false };
@Module({})
class LedgerModule {
  constructor(checks: HealthChecks, indicators: HealthIndicatorService) {
    checks.add(
      'ledger',
      async () => {
        const check = indicators.check('ledger');
        return ledger.failing ? check.down({ message: 'The ledger does not answer' }) : check.up({ entries: 3 });
      },
      ['health', 'ready'],
    );
  }
}

describe('liveness and readiness', () => {
  describe('with a model server that stops and comes back', () => {
    let stack: LlmStack;

    beforeAll(async () => {
      stack = await startLlmStack({ AUTH_TOKENS: 'secret' });
    });
    afterAll(() => stack?.close());

    it('is ready while the model server answers, naming every check; open without a token', async () => {
      const { status, body } = await get(stack.gateway, '/health/ready');
      expect(status).toBe(200);
      expect(body).toMatchObject({
        status: 'ok',
        info: {
          accepting: { status: 'up' },
          model: { status: 'up', url: stack.llm.baseUrl + 'models', http_status: 200 },
          mcp_upstreams: { status: 'up', servers: {} },
        },
        error: {},
      });
      expect(body.info.redis).toBeUndefined();
    });

    it('turns unready within seconds of the model server stopping, and ready again when it is back', async () => {
      const { gateway, llm } = stack;
      await llm.close();
      const stoppedAt = Date.now();
      let unready: any;
      await until(
        async () => {
          const { status, body } = await get(gateway, '/health/ready');
          unready = body;
          return status === 503;
        },
        6_000,
        '/health/ready to answer 503',
      );
      expect(Date.now() - stoppedAt).toBeLessThan(5_000);
      expect(unready).toMatchObject({
        status: 'error',
        error: { model: { status: 'down', message: 'The model server could not be reached' } },
        info: { accepting: { status: 'up' } },
      });
      // Neither liveness nor what balancers ask depends on the model server.
      expect((await get(gateway, '/health/live')).status).toBe(200);
      expect(await get(gateway, '/health')).toMatchObject({ status: 200, body: { status: 'ok', error: {} } });

      await llm.resume();
      await until(async () => (await get(gateway, '/health/ready')).status === 200, 6_000, '/health/ready to answer 200 again');
    });

    it("answers liveness with terminus' report", async () => {
      expect(await get(stack.gateway, '/health/live')).toEqual({ status: 200, body: { status: 'ok', info: {}, error: {}, details: {} } });
    });
  });

  describe('what readiness covers besides the model', () => {
    let llm: ScriptedLlm;
    let gateway: RunningGateway | undefined;
    let file: { path: string; remove(): void } | undefined;

    beforeAll(async () => {
      llm = await ScriptedLlm.start();
    });
    afterEach(async () => {
      await gateway?.close();
      gateway = undefined;
      file?.remove();
      file = undefined;
    });
    afterAll(() => llm.close());

    it('is unready while an upstream MCP server is not connected, and says which', async () => {
      const port = await freePort();
      file = serversFile({ gone: { url: `http://127.0.0.1:${port}/mcp` } });
      gateway = await startGateway({ LLM_BASE_URL: llm.baseUrl, MCP_SERVERS_FILE: file.path, MCP_UPSTREAM_CONNECT_TIMEOUT: 1 });
      await until(async () => (await get(gateway!, '/health/ready')).status === 503, 6_000, 'readiness to see the upstream');
      const { body } = await get(gateway, '/health/ready');
      expect(body.error.mcp_upstreams).toMatchObject({ status: 'down', message: 'Not connected: gone' });
      expect(body.info.model).toMatchObject({ status: 'up' });
    });

    it('leaves out the checks READINESS_IGNORE names', async () => {
      const port = await freePort();
      gateway = await startGateway({ LLM_BASE_URL: `http://127.0.0.1:${port}/v1/`, READINESS_IGNORE: 'model' });
      const { status, body } = await get(gateway, '/health/ready');
      expect(status).toBe(200);
      expect(Object.keys(body.info).sort()).toEqual(['accepting', 'mcp_upstreams']);
    });

    it('checks Redis when sessions live there', async () => {
      gateway = await startGateway({ LLM_BASE_URL: llm.baseUrl, REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: uniquePrefix() });
      const { status, body } = await get(gateway, '/health/ready');
      expect(status).toBe(200);
      expect(body.info.redis).toEqual({ status: 'up', latency_ms: expect.any(Number) });
    });

    it('is unready once the drain has begun, so balancers stop sending clients while it drains', async () => {
      gateway = await startGateway({ LLM_BASE_URL: llm.baseUrl });
      expect((await get(gateway, '/health/ready')).status).toBe(200);
      await gateway.app.get(DrainService).beforeApplicationShutdown();
      for (const path of ['/health/ready', '/health']) {
        const { status, body } = await get(gateway, path);
        expect(status).toBe(503);
        expect(body).toMatchObject({ status: 'error', error: { accepting: { status: 'down', message: 'Shutting down' } } });
      }
      expect((await get(gateway, '/health/live')).status).toBe(200);
    });
  });

  describe('/health', () => {
    let gateway: RunningGateway;

    beforeAll(async () => {
      gateway = await startGateway({ MCP_ENABLED: true, READINESS_IGNORE: 'model' }, [LedgerModule]);
    });
    afterAll(() => gateway?.close());
    afterEach(() => (ledger.failing = false));

    it('reports what this instance holds, each as a terminus indicator, and not the model server', async () => {
      const { status, body } = await get(gateway, '/health');
      expect(status).toBe(200);
      expect(body).toEqual({
        status: 'ok',
        info: body.details,
        error: {},
        details: {
          accepting: { status: 'up' },
          process: { status: 'up', uptime_s: expect.any(Number) },
          tools: { status: 'up', count: expect.any(Number) },
          sessions: { status: 'up', store: 'MemorySessionStore' },
          llm_gateway: { status: 'up', connections: 0 },
          xiaozhi: { status: 'up', connections: 0 },
          mcp: { status: 'up', websocket_connections: 0, http_sessions: 0 },
          ledger: { status: 'up', entries: 3 },
        },
      });
      expect(body.details.tools.count).toBeGreaterThan(0);
    });

    it('answers 503 while a check a module added is down, on every endpoint it was added to', async () => {
      ledger.failing = true;
      for (const path of ['/health', '/health/ready']) {
        const { status, body } = await get(gateway, path);
        expect(status).toBe(503);
        expect(body).toMatchObject({ status: 'error', error: { ledger: { status: 'down', message: 'The ledger does not answer' } } });
      }
      ledger.failing = false;
      expect((await get(gateway, '/health')).status).toBe(200);
    });
  });
});
