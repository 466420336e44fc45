import { Logger } from '@nestjs/common';
import { ThrottledWarning } from '../logging/throttled-warning';
import { redactUrl } from '../logging/redact';

/** How often an outage is told again while it lasts. */
const OUTAGE_WARNING_EVERY_MS = 30_000;

/**
 * What an instance says of one Redis while its connections fail, through the gateway's logger.
 * An instance holds a dozen connections to its Redis (sessions, fleet, reminders and BullMQ's,
 * MCP, rate limits), each reconnecting every few seconds, and each would report every failed
 * attempt; all of them report here instead, so an outage is one warning every
 * {@link OUTAGE_WARNING_EVERY_MS} and one line when Redis answers again. An ioredis client
 * without an 'error' listener would write its own raw lines to stderr, breaking JSON logs.
 */
export class RedisOutageLog {
  private static readonly byUrl = new Map<string, RedisOutageLog>();
  private readonly logger = new Logger('Redis');
  private warning = this.newWarning();
  private failing = false;

  private constructor(private readonly name: string) {}

  /** The log of the Redis at `url`, one per URL in the process (its password never shown). */
  static of(url: string): RedisOutageLog {
    const name = redactUrl(url);
    let log = RedisOutageLog.byUrl.get(name);
    if (!log) RedisOutageLog.byUrl.set(name, (log = new RedisOutageLog(name)));
    return log;
  }

  /** A connection (or BullMQ, of its own) failed: told at once the first time, then at most every 30 s. */
  readonly failed = (error: Error): void => {
    this.failing = true;
    this.warning.warn(`Redis at ${this.name} fails: ${error.message}; retrying`);
  };

  /** A connection is ready again: told once per outage, and the next outage is told at once. */
  readonly answered = (): void => {
    if (!this.failing) return;
    this.failing = false;
    this.warning = this.newWarning();
    this.logger.log(`Redis at ${this.name} answers again`);
  };

  private newWarning(): ThrottledWarning {
    return new ThrottledWarning(this.logger, OUTAGE_WARNING_EVERY_MS);
  }
}
