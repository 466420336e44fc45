import type { UpgradeContext, UpgradeGuard, UpgradeRefusedException } from './upgrade-guard';

/**
 * Refuses an upgrade once the route's protocol holds `limit` connections, with the refusal
 * its spec asks for (an HTTP status, or accept-then-close with a close code).
 */
export abstract class ConnectionLimitGuard implements UpgradeGuard {
  protected abstract readonly limit: number;

  /** What a client over the limit gets. */
  protected abstract refusal(limit: number): UpgradeRefusedException;

  canUpgrade({ openConnections }: UpgradeContext): void {
    if (openConnections >= this.limit) throw this.refusal(this.limit);
  }
}
