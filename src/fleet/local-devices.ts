import { Inject, Injectable } from '@nestjs/common';
import { Subject } from 'rxjs';
import type { DeviceEntry } from './device-entry';
import type { DeviceLink } from './device-link';
import { FLEET_STORES, FleetStores } from './fleet-stores';
import { ReplicaMessaging } from './replicas/replica-messaging';

/** The notice that closes a device's older connection on the instance holding it. */
const REPLACE = 'replace';

/**
 * The devices whose connections this instance holds, whatever protocol they speak: each joins the
 * directory when it connects ({@link attach}), follows it as its tools change, and leaves it when
 * it closes. A device connecting again replaces its older connection, here or on another instance.
 */
@Injectable()
export class LocalDevices {
  private readonly links = new Map<string, DeviceLink>();
  private readonly byConnection = new Map<string, DeviceLink>();
  private readonly attachedStream = new Subject<DeviceLink>();
  /** Each device that joined the directory from here (pushes held for it are delivered then). */
  readonly attached = this.attachedStream.asObservable();

  constructor(
    @Inject(FLEET_STORES) private readonly stores: FleetStores,
    private readonly messaging: ReplicaMessaging,
  ) {
    messaging.on(REPLACE, ({ connectionId }: { connectionId: string }) => this.byConnection.get(connectionId)?.replaced());
  }

  /** Devices whose connections this instance holds. */
  get count(): number {
    return this.links.size;
  }

  /** The device's connection here, if this instance holds it. */
  get(deviceId: string): DeviceLink | undefined {
    return this.links.get(deviceId);
  }

  /** The device a connection named at its upgrade, if it is one of this instance's devices. */
  deviceOfConnection(connectionId: string): string | undefined {
    return this.byConnection.get(connectionId)?.deviceId;
  }

  /** A device connected here: it takes its id in the directory, and the connection it replaces (here or on another instance) is closed. */
  async attach(link: DeviceLink): Promise<void> {
    this.links.set(link.deviceId, link);
    this.byConnection.set(link.connectionId, link);
    const replaced = await this.stores.directory.claim(this.entryOf(link));
    if (replaced && replaced.connectionId !== link.connectionId) {
      const local = this.byConnection.get(replaced.connectionId);
      if (local) local.replaced();
      else if (replaced.instance !== this.messaging.instanceId)
        await this.messaging.notify(replaced.instance, REPLACE, { connectionId: replaced.connectionId });
    }
    this.attachedStream.next(link);
  }

  /** Its tools changed: the directory, and so every agent's list, follows. */
  async toolsChanged(link: DeviceLink): Promise<void> {
    if (this.links.get(link.deviceId) !== link) return;
    await this.stores.directory.update(this.entryOf(link));
  }

  /** Its connection closed: it leaves the directory, unless a newer connection of it already took its place. */
  async detach(link: DeviceLink): Promise<void> {
    this.byConnection.delete(link.connectionId);
    if (this.links.get(link.deviceId) === link) this.links.delete(link.deviceId);
    await this.stores.directory.release(link.deviceId, link.connectionId);
  }

  private entryOf(link: DeviceLink): DeviceEntry {
    return {
      id: link.deviceId,
      protocol: link.protocol,
      ...(link.userAgent !== undefined && { userAgent: link.userAgent }),
      principal: link.principal,
      owner: link.owner,
      instance: this.messaging.instanceId,
      connectionId: link.connectionId,
      since: link.since,
      tools: link.agentTools(),
    };
  }
}
