import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import type { Subscription } from 'rxjs';
import { readBearerToken } from '../../core/auth/bearer-token';
import { credentialDeviceOf } from '../../core/auth/device-credential';
import { CLOSE_POLICY_VIOLATION } from '../../core/ws/connection';
import { ConnectionRegistry } from '../../core/ws/connection-registry';
import type { DeviceLink } from '../device-link';
import { LocalDevices } from '../local-devices';
import { ReplicaMessaging } from '../replicas/replica-messaging';
import { secretHash } from './activation-codes';
import { ACTIVATION_STORE, type ActivationStore } from './activation-store';

/** The notice that closes, on every instance, the connections a device's revoked secret opened. */
const CLOSE_REVOKED = 'device-credential-revoked';

/**
 * Ends the connections a device secret opened once it no longer authenticates (revoked, or the
 * device unbound), on every replica. The secret is dropped from the store first, so no new
 * upgrade gets through; then every instance is told, and closes the ones it holds. An upgrade
 * that was checked just before the drop and joins the fleet just after the notice is caught by
 * the second check every credentialed connection gets when it joins the directory.
 */
@Injectable()
export class DeviceCredentialSessions implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('Activation');
  private attachedSubscription?: Subscription;

  constructor(
    private readonly messaging: ReplicaMessaging,
    private readonly connections: ConnectionRegistry,
    private readonly local: LocalDevices,
    @Inject(ACTIVATION_STORE) private readonly store: ActivationStore,
  ) {}

  onModuleInit(): void {
    this.messaging.on(CLOSE_REVOKED, ({ deviceId }: { deviceId: string }) => this.closeHere(deviceId));
    this.attachedSubscription = this.local.attached.subscribe((link) => void this.recheck(link));
  }

  onModuleDestroy(): void {
    this.attachedSubscription?.unsubscribe();
  }

  /** Closes the device's credentialed connections here and on every other instance. */
  async closeEverywhere(deviceId: string): Promise<void> {
    await this.messaging.broadcast(CLOSE_REVOKED, { deviceId });
  }

  private closeHere(deviceId: string): void {
    for (const connection of this.connections.list()) {
      if (credentialDeviceOf(connection.request) !== deviceId) continue;
      this.logger.log(`Device ${deviceId}: its credential was revoked, its connection closes`);
      connection.close(CLOSE_POLICY_VIOLATION, 'Device credential revoked');
    }
  }

  /** A credentialed connection that joined the directory: still a valid secret of its device? */
  private async recheck(link: DeviceLink): Promise<void> {
    const connection = this.connections.get(link.connectionId);
    if (!connection || credentialDeviceOf(connection.request) === undefined) return;
    const token = readBearerToken(connection.request);
    let found: { deviceId: string } | undefined;
    try {
      found = token === undefined ? undefined : await this.store.deviceOfSecret(secretHash(token));
    } catch (error) {
      // The upgrade's own check passed a moment ago: a store that fails now does not end it.
      this.logger.warn(`Device ${link.deviceId}: its credential could not be checked again: ${(error as Error).message}`);
      return;
    }
    if (found?.deviceId === link.deviceId) return;
    this.logger.log(`Device ${link.deviceId}: its credential was revoked while it connected, its connection closes`);
    connection.close(CLOSE_POLICY_VIOLATION, 'Device credential revoked');
  }
}
