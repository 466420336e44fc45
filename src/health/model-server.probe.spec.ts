import { createServer, IncomingMessage, Server } from 'http';
import type { AddressInfo } from 'net';
import { loadGatewayConfig } from '../config/gateway-config';
import { MODEL_PROBE_CACHE_MS, MODEL_PROBE_TIMEOUT_MS, ModelServerProbe } from './model-server.probe';

describe('ModelServerProbe', () => {
  let server: Server;
  let answer: (request: IncomingMessage) => number | 'hang';
  const seen: IncomingMessage[] = [];
  let baseUrl: string;

  beforeAll(async () => {
    server = createServer((request, response) => {
      seen.push(request);
      const status = answer(request);
      if (status !== 'hang') response.writeHead(status, { 'content-type': 'application/json' }).end('{"data": []}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  beforeEach(() => {
    seen.length = 0;
  });

  const probeOf = (settings: Record<string, string> = {}) => new ModelServerProbe(loadGatewayConfig({ LLM_BASE_URL: baseUrl, ...settings }));

  it('asks GET {LLM_BASE_URL}models, with the API key when there is one', async () => {
    answer = () => 200;
    await expect(probeOf({ LLM_API_KEY: 'sk-test' }).check()).resolves.toMatchObject({ up: true, status: 200 });
    expect(seen.map((request) => [request.method, request.url, request.headers.authorization])).toEqual([['GET', '/v1/models', 'Bearer sk-test']]);
  });

  it.each([
    [500, false],
    [503, false],
    [401, false],
    [403, false],
    [404, true],
    [429, true],
  ])('takes HTTP %i as up: %s', async (status, up) => {
    answer = () => status;
    const result = await probeOf().check();
    expect(result).toMatchObject({ up, status });
    if (!up) expect(result.problem).toBe(`The model server answered HTTP ${status}`);
  });

  it('is down when the server does not answer in time', async () => {
    answer = () => 'hang';
    const started = Date.now();
    await expect(probeOf().check()).resolves.toMatchObject({ up: false, problem: `No answer within ${MODEL_PROBE_TIMEOUT_MS / 1000} s` });
    expect(Date.now() - started).toBeLessThan(MODEL_PROBE_TIMEOUT_MS + 1_000);
  });

  it('shares a probe in flight and keeps its answer for a while', async () => {
    answer = () => 200;
    const probe = probeOf();
    await Promise.all([probe.check(), probe.check(), probe.check()]);
    await probe.check();
    expect(seen).toHaveLength(1);
    expect(MODEL_PROBE_CACHE_MS).toBeLessThanOrEqual(5_000);
  });
});
