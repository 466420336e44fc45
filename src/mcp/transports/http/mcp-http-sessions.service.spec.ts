import { Test, TestingModule } from '@nestjs/testing';
import { randomUUID } from 'crypto';
import { ClientRequest, createServer, IncomingHttpHeaders, request as httpRequest, Server } from 'http';
import Redis from 'ioredis';
import type { AddressInfo } from 'net';
import type { EnvironmentInput } from '../../../config/environment';
import type { AuthenticatedRequest } from '../../../core/auth/bearer-auth.guard';
import { GatewayModule } from '../../../gateway.module';
import { McpHttpSessions } from './mcp-http-sessions.service';

const PROTOCOL_VERSION = '2025-06-18';
const SESSION_TIMEOUT_S = 60;
const REDIS_URL = process.env.TEST_REDIS_URL ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Whether the test moves time by hand; requests then still get the zero-delay timers the SDK's HTTP layer waits on. */
let fakeTime = false;

function useFakeTime(): void {
  jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask', 'setImmediate', 'clearImmediate'] });
  fakeTime = true;
}

/** `pending`, running the timers due now (time standing still) while it waits on real I/O. */
async function settled<T>(pending: Promise<T>): Promise<T> {
  let done = false;
  void pending.then(
    () => (done = true),
    () => (done = true),
  );
  while (!done) {
    if (fakeTime) jest.advanceTimersByTime(0);
    await new Promise((resolve) => setImmediate(resolve));
  }
  return pending;
}

interface RequestOptions {
  principal?: string;
  session?: string;
  body?: unknown;
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  /** The JSON body, or the last message of an event stream. */
  body: any;
}

/**
 * One gateway instance's {@link McpHttpSessions}, built by the gateway's own module, served on
 * 127.0.0.1 by a bare HTTP server that does only what the controller and guards do before it:
 * parse the body and set the principal (here from an `x-principal` header).
 */
class Instance {
  private requests = 0;

  private constructor(
    private readonly moduleRef: TestingModule,
    private readonly server: Server,
    /** By request: resolves once the server has seen its response close, as the sessions service does. */
    private readonly closes: Map<string, Promise<void>>,
    readonly sessions: McpHttpSessions,
  ) {}

  static async start(settings: EnvironmentInput): Promise<Instance> {
    const all = { CLOUD_LOG_LEVEL: 'ERROR', MCP_WS_PORT: 0, REDIS_URL: '', CLOUD_SESSION_TIMEOUT: SESSION_TIMEOUT_S, ...settings };
    const moduleRef = await Test.createTestingModule({ imports: [GatewayModule.forRoot({ settings: all })] }).compile();
    await moduleRef.init();
    const sessions = moduleRef.get(McpHttpSessions);
    const closes = new Map<string, Promise<void>>();
    const server = createServer((request, response) => {
      closes.set(request.headers['x-request'] as string, new Promise((resolve) => response.once('close', () => resolve())));
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        (request as AuthenticatedRequest).principal = request.headers['x-principal'] as string | undefined;
        void sessions.handle(request as AuthenticatedRequest, response, text === '' ? undefined : JSON.parse(text));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return new Instance(moduleRef, server, closes, sessions);
  }

  /** Sends a request and reads its whole answer. */
  async send(method: string, options: RequestOptions = {}): Promise<Answer> {
    const [request, id] = this.open(method, options);
    const answer = await settled(
      new Promise<Answer>((resolve, reject) => {
        request.on('response', (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => {
            resolve({ status: response.statusCode!, headers: response.headers, body: parseBody(Buffer.concat(chunks).toString('utf8')) });
          });
        });
        request.on('error', reject);
      }),
    );
    await settled(this.closes.get(id)!);
    return answer;
  }

  /** Opens the session's event stream (`GET`); resolves once it is open, with the request to end it. */
  openStream(principal: string, session: string): Promise<{ status: number; end(): Promise<void> }> {
    const [request, id] = this.open('GET', { principal, session });
    return settled(
      new Promise((resolve, reject) => {
        request.on('response', (response) => {
          const closed = this.closes.get(id)!;
          resolve({
            status: response.statusCode!,
            end: async () => {
              request.destroy();
              await settled(closed);
            },
          });
        });
        request.on('error', reject);
      }),
    );
  }

  /** Starts a session for `principal`; its id. */
  async initialize(principal: string): Promise<string> {
    const answer = await this.send('POST', { principal, body: initializeRequest() });
    expect(answer.status).toBe(200);
    return answer.headers['mcp-session-id'] as string;
  }

  ping(principal: string, session: string): Promise<Answer> {
    return this.send('POST', { principal, session, body: { jsonrpc: '2.0', id: 2, method: 'ping' } });
  }

  async close(): Promise<void> {
    await new Promise((resolve) => this.server.close(resolve));
    await this.moduleRef.close();
  }

  /** Sends a request; it and the id the server knows it by. */
  private open(method: string, { principal, session, body }: RequestOptions): [ClientRequest, string] {
    const { port } = this.server.address() as AddressInfo;
    const id = String((this.requests += 1));
    const headers: Record<string, string> = {
      'x-request': id,
      Accept: method === 'GET' ? 'text/event-stream' : 'application/json, text/event-stream',
      ...(body !== undefined && { 'Content-Type': 'application/json' }),
      ...(principal !== undefined && { 'x-principal': principal }),
      ...(session !== undefined && { 'Mcp-Session-Id': session, 'Mcp-Protocol-Version': PROTOCOL_VERSION }),
    };
    const request = httpRequest({ host: '127.0.0.1', port, path: '/mcp', method, headers, agent: false });
    request.end(body === undefined ? undefined : JSON.stringify(body));
    return [request, id];
  }
}

function initializeRequest(id = 1) {
  return {
    jsonrpc: '2.0',
    id,
    method: 'initialize',
    params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'spec', version: '1.0.0' } },
  };
}

function parseBody(text: string): unknown {
  if (text === '') return undefined;
  const events = text.split('\n').filter((line) => line.startsWith('data: '));
  return JSON.parse(events.length > 0 ? events[events.length - 1].slice('data: '.length) : text);
}

const NOT_FOUND = {
  status: 404,
  body: { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found: start a new one with an initialize request' } },
};

describe('McpHttpSessions', () => {
  describe('on one instance, sessions in memory', () => {
    let gateway: Instance;

    beforeEach(async () => {
      gateway = await Instance.start({ MCP_HTTP_MAX_SESSIONS: 3, MCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL: 2 });
    });
    afterEach(async () => {
      jest.useRealTimers();
      fakeTime = false;
      await gateway.close();
    });

    it('starts a session on an initialize without a session id, and serves its later requests', async () => {
      const started = await gateway.send('POST', { principal: 'alice', body: initializeRequest(7) });
      expect(started.status).toBe(200);
      const session = started.headers['mcp-session-id'] as string;
      expect(session).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      expect(started.body).toMatchObject({
        jsonrpc: '2.0',
        id: 7,
        result: { protocolVersion: PROTOCOL_VERSION, capabilities: { tools: { listChanged: true } } },
      });
      expect(gateway.sessions.size).toBe(1);

      expect(await gateway.ping('alice', session)).toMatchObject({ status: 200, body: { jsonrpc: '2.0', id: 2, result: {} } });
      expect(gateway.sessions.size).toBe(1);
    });

    it('serves a session only to the principal that started it, and ids it handed out only', async () => {
      const session = await gateway.initialize('alice');
      expect(await gateway.ping('mallory', session)).toMatchObject(NOT_FOUND);
      expect(await gateway.ping('mallory', randomUUID())).toMatchObject(NOT_FOUND);
      expect(await gateway.ping('alice', 'not-a-session-id')).toMatchObject(NOT_FOUND);
      expect(await gateway.ping('alice', session)).toMatchObject({ status: 200 });
    });

    it('refuses what cannot start or continue a session', async () => {
      expect(await gateway.send('POST', { principal: 'alice', body: { jsonrpc: '2.0', id: 1, method: 'ping' } })).toMatchObject({
        status: 400,
        body: { error: { code: -32000, message: 'Bad Request: no Mcp-Session-Id; start a session with an initialize request' } },
      });
      const wrongParams = { ...initializeRequest(), params: { capabilities: {} } };
      expect(await gateway.send('POST', { principal: 'alice', body: wrongParams })).toMatchObject({
        status: 400,
        body: { id: 1, error: { code: -32602 } },
      });
      const put = await gateway.send('PUT', { principal: 'alice' });
      expect(put).toMatchObject({ status: 405, headers: { allow: 'GET, POST, DELETE' } });
      expect(gateway.sessions.size).toBe(0);
    });

    it('ends a session on DELETE, for good', async () => {
      const session = await gateway.initialize('alice');
      expect((await gateway.send('DELETE', { principal: 'alice', session })).status).toBe(200);
      expect(gateway.sessions.size).toBe(0);
      expect(await gateway.ping('alice', session)).toMatchObject(NOT_FOUND);
    });

    it('holds at most MCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL per token, freeing a place when one ends', async () => {
      const [first] = [await gateway.initialize('alice'), await gateway.initialize('alice')];
      const refused = await gateway.send('POST', { principal: 'alice', body: initializeRequest(3) });
      expect(refused).toMatchObject({
        status: 429,
        headers: { 'retry-after': '1' },
        body: { id: 3, error: { code: -32000, message: expect.stringContaining('at most 2 (MCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL)') } },
      });
      await gateway.send('DELETE', { principal: 'alice', session: first });
      expect((await gateway.send('POST', { principal: 'alice', body: initializeRequest() })).status).toBe(200);
    });

    it('holds at most MCP_HTTP_MAX_SESSIONS on the instance, whoever asks', async () => {
      await gateway.initialize('alice');
      await gateway.initialize('bob');
      await gateway.initialize('carol');
      const refused = await gateway.send('POST', { principal: 'dave', body: initializeRequest(4) });
      expect(refused).toMatchObject({
        status: 503,
        headers: { 'retry-after': '1' },
        body: { id: 4, error: { message: 'Too many MCP sessions on this instance: at most 3 (MCP_HTTP_MAX_SESSIONS); try again later' } },
      });
      expect(gateway.sessions.size).toBe(3);
    });

    it('drops a session idle for CLOUD_SESSION_TIMEOUT; a request or an open stream keeps it', async () => {
      useFakeTime();
      const timeoutMs = SESSION_TIMEOUT_S * 1000;
      const session = await gateway.initialize('alice');
      const other = await gateway.initialize('alice');

      jest.advanceTimersByTime(timeoutMs - 1);
      expect((await gateway.ping('alice', session)).status).toBe(200);
      const stream = await gateway.openStream('alice', session);
      expect(stream.status).toBe(200);
      jest.advanceTimersByTime(1);
      expect(gateway.sessions.size).toBe(1);
      expect(await gateway.ping('alice', other)).toMatchObject(NOT_FOUND);

      jest.advanceTimersByTime(2 * timeoutMs);
      expect(gateway.sessions.size).toBe(1);
      await stream.end();
      jest.advanceTimersByTime(timeoutMs - 1);
      expect(gateway.sessions.size).toBe(1);
      jest.advanceTimersByTime(1);
      expect(gateway.sessions.size).toBe(0);
      expect(await gateway.ping('alice', session)).toMatchObject(NOT_FOUND);
      // Both places of the token are free again.
      await gateway.initialize('alice');
      await gateway.initialize('alice');
    });
  });

  describe('across instances, sessions in Redis', () => {
    const prefix = `mcp-http-sessions-spec:${randomUUID().slice(0, 8)}:`;
    let first: Instance;
    let second: Instance;

    beforeAll(async () => {
      const settings = { REDIS_URL, REDIS_KEY_PREFIX: prefix };
      [first, second] = [await Instance.start(settings), await Instance.start(settings)];
    });
    afterAll(async () => {
      await first?.close();
      await second?.close();
      const redis = new Redis(REDIS_URL);
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length > 0) await redis.del(...keys);
      await redis.quit();
    });

    it('lets another instance take a session over, for its principal only, and ends it everywhere on DELETE', async () => {
      const session = await first.initialize('alice');
      expect(await second.ping('mallory', session)).toMatchObject(NOT_FOUND);
      expect(second.sessions.size).toBe(0);

      expect(await second.ping('alice', session)).toMatchObject({ status: 200, body: { id: 2, result: {} } });
      expect(second.sessions.size).toBe(1);
      expect(await first.ping('alice', session)).toMatchObject({ status: 200 });

      expect((await second.send('DELETE', { principal: 'alice', session })).status).toBe(200);
      expect(second.sessions.size).toBe(0);
      // The first instance's copy learns it from the record at its next request.
      expect(await first.ping('alice', session)).toMatchObject(NOT_FOUND);
      expect(first.sessions.size).toBe(0);
    });
  });
});
