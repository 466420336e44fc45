import type { UpgradeContext, UpgradeGuard, UpgradeRefusedException } from './upgrade-guard';

/**
 * Refuses an upgrade once the route's protocol holds `limit` authenticated connections, with
 * the refusal its spec asks for (an HTTP status, or accept-then-close with a close code). A
 * socket that authenticates by message is counted, and may be refused, when it does.
 */
export abstract class ConnectionLimitGuard implements UpgradeGuard {
  protected abstract readonly limit: number;

  /** What a client over the limit gets. */
  protected abstract refusal(limit: number): UpgradeRefusedException;

  /** The refusal due with `openConnections` already open, if any. */
  refusalAt(openConnections: number): UpgradeRefusedException | undefined {
    return openConnections >= this.limit ? this.refusal(this.limit) : undefined;
  }

  canUpgrade({ openConnections, principal }: UpgradeContext): void {
    if (principal === undefined) return;
    const refusal = this.refusalAt(openConnections);
    if (refusal) throw refusal;
  }
}
