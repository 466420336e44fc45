import type { Logger } from '@nestjs/common';

/**
 * A warning written at most once per `everyMs`: a store or a Redis that keeps failing is
 * reported while it fails, not once per request it fails.
 */
export class ThrottledWarning {
  private lastAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly logger: Logger,
    private readonly everyMs = 10_000,
  ) {}

  warn(message: string): void {
    const now = Date.now();
    if (now - this.lastAt < this.everyMs) return;
    this.lastAt = now;
    this.logger.warn(message);
  }
}
