import Redis, { RedisOptions } from 'ioredis';
import { StartupError } from '../../shared/startup-error';
import { redactUrl } from '../logging/redact';
import { RedisOutageLog } from './redis-outage-log';

/** How long a Redis command may take before the request fails with SESSION_ERROR. */
export const COMMAND_TIMEOUT_MS = 2000;

/** How long the boot waits for Redis before it gives up with a clear error. */
const CONNECT_TIMEOUT_MS = 5000;

/** Thrown at boot when Redis cannot be reached; the message names the URL (without its password). */
export class RedisUnavailableError extends StartupError {
  constructor(url: string, cause: string) {
    super(`Cannot reach Redis at ${redactUrl(url)} (REDIS_URL): ${cause}`);
  }
}

/**
 * `count` connections to `url`, each ready, or {@link RedisUnavailableError} with what went
 * wrong. Commands fail fast rather than queue while Redis is away (no offline queue), so
 * requests answer at once; a boot that cannot connect leaves nothing running, and once
 * connected each client reconnects for ever in the background, its failures and its return told
 * through the gateway's logger ({@link RedisOutageLog}). `prepare` runs on each client before it
 * connects (to define scripts). Every ioredis client the gateway makes is made here (BullMQ's
 * own connections report to the same log).
 */
export async function connectRedis(url: string, count: number, prepare: (client: Redis) => void = () => undefined): Promise<Redis[]> {
  const options: RedisOptions = {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: CONNECT_TIMEOUT_MS,
    // At boot a failure is final; once connected, the connection is retried for ever (see below).
    retryStrategy: () => null,
  };
  const clients = Array.from({ length: count }, () => new Redis(url, options));
  clients.forEach(prepare);
  // ioredis reports why a connection failed as an 'error' event and rejects connect() vaguely.
  let cause: string | undefined;
  const remember = (error: Error) => (cause ??= error.message);
  clients.forEach((client) => client.on('error', remember));
  try {
    await Promise.all(clients.map((client) => client.connect()));
    await clients[0].ping();
  } catch (error) {
    // A client whose connection already ended must not be disconnected again: ioredis would arm a timer.
    for (const client of clients) if (client.status !== 'end') client.disconnect();
    throw new RedisUnavailableError(url, cause ?? (error as Error).message);
  } finally {
    clients.forEach((client) => client.off('error', remember));
  }
  // Armed only once connected, so nothing of a failed boot outlives it.
  const outages = RedisOutageLog.of(url);
  for (const client of clients) {
    client.options.retryStrategy = (attempt) => Math.min(100 * 2 ** attempt, 5000);
    client.on('error', outages.failed).on('ready', outages.answered);
  }
  return clients;
}
