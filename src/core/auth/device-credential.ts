import type { IncomingMessage } from 'http';

/**
 * How a device's own secret starts (one issued at its activation): only tokens that do are
 * looked up as device secrets, so a flood of made-up tokens costs no store round trip.
 */
export const DEVICE_SECRET_PREFIX = 'dev_';

/** The device and owner a device secret proves, or `undefined` for a secret that is none (any more). */
export type DeviceCredentialCheck = (secret: string) => Promise<{ deviceId: string; principal: string } | undefined>;

/** An upgrade request authenticated by a device secret: the one device it may connect as. */
interface CredentialedRequest extends IncomingMessage {
  credentialDevice?: string;
}

/** Marks an upgrade as authenticated by `deviceId`'s own secret. */
export function markDeviceCredential(request: IncomingMessage, deviceId: string): void {
  (request as CredentialedRequest).credentialDevice = deviceId;
}

/** The device whose own secret authenticated the upgrade, if one did. */
export const credentialDeviceOf = (request: IncomingMessage): string | undefined => (request as CredentialedRequest).credentialDevice;
