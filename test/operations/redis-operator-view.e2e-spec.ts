import Redis from 'ioredis';
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { readRedisPersistence } from '../../src/core/redis/redis-persistence';
import { listeningPort, MainProcess, startMain } from '../support/main-process';
import { RedisServer } from '../support/redis-server';

/** The records of a JSON log: every line must be one object. */
function records(text: string): Record<string, unknown>[] {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        throw new Error(`A log line is not JSON: ${line}`);
      }
    });
}

async function waitFor(condition: () => boolean, what: () => string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Timed out; output so far:\n${what()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function metric(port: number, name: string): Promise<number | undefined> {
  const response = await fetch(`http://127.0.0.1:${port}/metrics`);
  const family = parsePrometheusTextFormat(await response.text()).find((candidate) => candidate.name === name);
  const sample = family?.metrics[0] as { value?: string } | undefined;
  return sample?.value === undefined ? undefined : Number(sample.value);
}

/**
 * What an operator sees of the gateway's Redis, on the built gateway (`node dist/main.js`) with
 * JSON logs and a redis-server of the test's own, without persistence (`--save '' --appendonly no`).
 */
describe("the gateway's Redis, as its operator sees it", () => {
  let server: RedisServer;
  let main: MainProcess | undefined;

  beforeEach(async () => {
    server = await RedisServer.start();
  });
  afterEach(async () => {
    main?.child.kill('SIGKILL');
    await main?.exited;
    main = undefined;
    await server.stop();
  });

  it('warns at start that a Redis without persistence loses reminders when it restarts, and reports it as a metric', async () => {
    main = startMain({ REDIS_URL: server.url, REDIS_KEY_PREFIX: 'vtg-persistence:', CLOUD_LOG_FORMAT: 'json' });
    const port = await listeningPort(main.output);
    const warnings = records(main.output()).filter((record) => record.level === 'warn' && record.context === 'Redis');
    expect(warnings).toEqual([
      expect.objectContaining({
        message: expect.stringMatching(
          new RegExp(`^Redis at ${server.url} has no persistence \\(appendonly no, save ""\\): a restart of it loses every pending reminder, held push`),
        ),
      }),
    ]);
    expect(await metric(port, 'gateway_redis_persistent')).toBe(0);
  });

  it('says in JSON, a few lines and no raw stack, that Redis is away, and that it is back', async () => {
    main = startMain({ REDIS_URL: server.url, REDIS_KEY_PREFIX: 'vtg-outage:', CLOUD_LOG_FORMAT: 'json' });
    const { output } = main;
    await listeningPort(output);
    const before = output().length;

    await server.stop();
    // Long enough for every connection (sessions, fleet, reminders' queue and worker, MCP,
    // rate limits) to fail and retry a few times.
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    const during = output().slice(before);
    expect(during).not.toContain('Unhandled error event');
    const outage = records(during).filter((record) => /ECONNREFUSED|Connection is closed|connection lost/i.test(String(record.message)));
    expect(outage.length).toBeGreaterThan(0);
    expect(outage.length).toBeLessThanOrEqual(6);
    expect(outage.every((record) => record.level === 'warn' || record.level === 'error')).toBe(true);

    await server.restartEmpty();
    await waitFor(() => /Redis at redis:\/\/127\.0\.0\.1:\d+ answers again/.test(output()), output);
    expect(output()).not.toContain('Unhandled error event');
    records(output());
  });
});

/** What `readRedisPersistence` makes of a real Redis whose CONFIG command is renamed away, as managed Redis services do. */
describe('the persistence of a Redis without CONFIG', () => {
  const dir = mkdtempSync(join(tmpdir(), 'vtg-aof-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  async function persistenceOf(args: string[]) {
    const server = await RedisServer.start(['--rename-command', 'CONFIG', '', '--dir', dir, ...args]);
    const redis = new Redis(server.url);
    try {
      await expect(redis.config('GET', 'appendonly')).rejects.toThrow(/unknown command/);
      return await readRedisPersistence(redis);
    } finally {
      redis.disconnect();
      await server.stop();
    }
  }

  it('is read from INFO: on with the append-only file, unknown without it (snapshots cannot be seen)', async () => {
    expect(await persistenceOf(['--appendonly', 'yes'])).toEqual({ persistent: true, detail: 'aof_enabled:1 (INFO persistence; CONFIG refused)' });
    expect((await persistenceOf([])).persistent).toBeUndefined();
  });
});
