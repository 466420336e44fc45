import { Logger } from '@nestjs/common';
import { createServer, IncomingMessage, Server, ServerResponse } from 'http';
import type { AddressInfo } from 'net';
import { PushWebhooks, WebhookSettings } from './push-webhooks';

/** A webhook receiver on 127.0.0.1 that answers as `answer` says, and records what it was sent. */
async function receiver(
  answer: (request: IncomingMessage, response: ServerResponse, body: string) => void,
): Promise<{ url: string; bodies: string[]; server: Server }> {
  const bodies: string[] = [];
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => {
      bodies.push(body);
      answer(request, response, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, bodies, server };
}

const settingsFor = (url: string, more: Partial<WebhookSettings> = {}): WebhookSettings => ({
  url,
  timeoutMs: 200,
  retries: 2,
  backoffMs: 20,
  queueMax: 100,
  concurrency: 4,
  ...more,
});

const eventually = async (check: () => boolean, withinMs = 3000) => {
  const until = Date.now() + withinMs;
  while (!check()) {
    if (Date.now() > until) throw new Error('not in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};

describe('PushWebhooks', () => {
  const servers: Server[] = [];
  const hooks: PushWebhooks[] = [];
  beforeAll(() => Logger.overrideLogger(false));
  afterEach(async () => {
    hooks.splice(0).forEach((hook) => hook.close());
    await Promise.all(
      servers.splice(0).map(
        (server) =>
          new Promise<void>((resolve) => {
            server.closeAllConnections();
            server.close(() => resolve());
          }),
      ),
    );
  });

  const hookTo = (url: string, more?: Partial<WebhookSettings>) => {
    const hook = new PushWebhooks(settingsFor(url, more));
    hooks.push(hook);
    return hook;
  };

  it('posts each change as JSON', async () => {
    const at = await receiver((request, response) => response.writeHead(request.headers['content-type'] === 'application/json' ? 204 : 400).end());
    servers.push(at.server);
    const hook = hookTo(at.url);
    expect(hook.enqueue({ id: 'push-1', state: 'sent' })).toBe(true);
    await eventually(() => hook.counters.delivered === 1);
    expect(JSON.parse(at.bodies[0])).toEqual({ id: 'push-1', state: 'sent' });
  });

  it('tries a failing hook again a bounded number of times, backing off, then gives up', async () => {
    const at = await receiver((_request, response) => response.writeHead(500).end());
    servers.push(at.server);
    const hook = hookTo(at.url, { retries: 2 });
    const started = Date.now();
    hook.enqueue({ id: 'push-2' });
    await eventually(() => hook.counters.failed === 1);
    expect(at.bodies).toHaveLength(3);
    expect(Date.now() - started).toBeGreaterThanOrEqual(20 + 40);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(at.bodies).toHaveLength(3);
  });

  it('gives up on a hook that never answers after its timeout per attempt, and enqueueing never waits for it', async () => {
    const at = await receiver(() => undefined); // never answers
    servers.push(at.server);
    const hook = hookTo(at.url, { timeoutMs: 300, retries: 1, backoffMs: 10 });
    const started = performance.now();
    for (let index = 0; index < 10; index++) expect(hook.enqueue({ id: `push-${index}` })).toBe(true);
    // All taken well before the first attempt could time out.
    expect(performance.now() - started).toBeLessThan(300);
    expect(hook.counters.failed).toBe(0);
    // 10 changes, 4 at a time, 2 attempts of 300 ms each: about 3 rounds of 600 ms.
    await eventually(() => hook.counters.failed === 10, 10_000);
    expect(performance.now() - started).toBeGreaterThanOrEqual(3 * 600 - 50);
    expect(at.bodies).toHaveLength(20);
    expect(hook.counters.delivered).toBe(0);
  });

  it('drops and counts what is over its queue bound', async () => {
    const at = await receiver(() => undefined);
    servers.push(at.server);
    const hook = hookTo(at.url, { queueMax: 5, concurrency: 1, timeoutMs: 1000 });
    const queued = Array.from({ length: 20 }, (_, index) => hook.enqueue({ index }));
    // One is being posted, five wait; the rest are dropped.
    expect(queued.filter(Boolean)).toHaveLength(6);
    expect(hook.counters.dropped).toBe(14);
    expect(hook.waiting).toBe(5);
  });

  it('drops what is queued when closed, and takes nothing more', async () => {
    const at = await receiver(() => undefined);
    servers.push(at.server);
    const hook = hookTo(at.url, { concurrency: 1 });
    hook.enqueue({ one: 1 });
    hook.enqueue({ two: 2 });
    hook.close();
    expect(hook.waiting).toBe(0);
    expect(hook.enqueue({ three: 3 })).toBe(false);
  });
});
