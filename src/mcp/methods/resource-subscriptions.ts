import type { ContextCatalogueService } from '../../core/context/context-catalogue.service';
import { answeredAsMcp } from './context-errors';

/**
 * One MCP session's `resources/subscribe`: each URI subscribed once, at the upstream that owns it
 * (as for a read, and within the caller's grant), its updates told by `updated` (the session's
 * `notifications/resources/updated`); everything unsubscribed when the session closes.
 */
export class ResourceSubscriptions {
  private readonly active = new Map<string, Promise<() => void>>();
  private closed = false;

  constructor(
    private readonly principal: string | undefined,
    private readonly catalogue: ContextCatalogueService,
    private readonly updated: (uri: string) => void,
  ) {}

  async subscribe(uri: string): Promise<Record<string, never>> {
    let subscription = this.active.get(uri);
    if (!subscription) {
      subscription = answeredAsMcp(() => this.catalogue.subscribe(this.principal, uri, () => this.updated(uri)));
      this.active.set(uri, subscription);
      // A refused subscription is forgotten, so the client may try again; one that outlived the session is undone.
      subscription.then(
        (unsubscribe) => this.closed && unsubscribe(),
        () => this.active.get(uri) === subscription && this.active.delete(uri),
      );
    }
    await subscription;
    return {};
  }

  async unsubscribe(uri: string): Promise<Record<string, never>> {
    const subscription = this.active.get(uri);
    this.active.delete(uri);
    (await subscription?.catch(() => undefined))?.();
    return {};
  }

  close(): void {
    this.closed = true;
    for (const subscription of this.active.values())
      void subscription.then(
        (unsubscribe) => unsubscribe(),
        () => undefined,
      );
    this.active.clear();
  }
}
