import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { SubscribeRequestSchema, UnsubscribeRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { ContextCatalogueService } from '../core/context/context-catalogue.service';
import { answeredAsMcp } from './context-errors';

/**
 * One MCP session's `resources/subscribe`: each URI subscribed once, at the upstream that owns it
 * (as for a read, and within the caller's grant), its updates sent as
 * `notifications/resources/updated`; everything unsubscribed when the session closes.
 */
export class ResourceSubscriptions {
  private readonly active = new Map<string, Promise<() => void>>();
  private closed = false;

  constructor(
    private readonly server: Server,
    private readonly principal: string | undefined,
    private readonly catalogue: ContextCatalogueService,
  ) {
    server.setRequestHandler(SubscribeRequestSchema, async ({ params: { uri } }) => {
      await this.subscribe(uri);
      return {};
    });
    server.setRequestHandler(UnsubscribeRequestSchema, async ({ params: { uri } }) => {
      const subscription = this.active.get(uri);
      this.active.delete(uri);
      (await subscription?.catch(() => undefined))?.();
      return {};
    });
  }

  private subscribe(uri: string): Promise<unknown> {
    let subscription = this.active.get(uri);
    if (!subscription) {
      const updated = () => void this.server.sendResourceUpdated({ uri }).catch(() => undefined);
      subscription = answeredAsMcp(() => this.catalogue.subscribe(this.principal, uri, updated));
      this.active.set(uri, subscription);
      // A refused subscription is forgotten, so the client may try again; one that outlived the session is undone.
      subscription.then(
        (unsubscribe) => this.closed && unsubscribe(),
        () => this.active.get(uri) === subscription && this.active.delete(uri),
      );
    }
    return subscription;
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
