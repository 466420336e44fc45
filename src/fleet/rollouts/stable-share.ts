import { createHash } from 'crypto';

/** Buckets a percentage is counted in: hundredths of a percent. */
export const SHARE_BUCKETS = 10_000;

/**
 * Where a device falls in a rollout, in [0, {@link SHARE_BUCKETS}): a hash of the rollout's id and
 * the device's, so it never changes for that pair. A device is in a `percent` group when its
 * bucket is below `percent × 100`; widening only raises that bound, so a device once in stays in,
 * and nothing moves a device back and forth. Salting by the rollout's id gives each rollout its
 * own sample, so the same few devices are not every rollout's first.
 */
export function shareBucket(rolloutId: string, deviceId: string): number {
  const digest = createHash('sha256').update(rolloutId).update('\0').update(deviceId).digest();
  return digest.readUInt32BE(0) % SHARE_BUCKETS;
}

/** Whether `deviceId` is in the first `percent` % of `rolloutId`'s devices. */
export function inShare(rolloutId: string, deviceId: string, percent: number): boolean {
  return shareBucket(rolloutId, deviceId) < Math.round(percent * (SHARE_BUCKETS / 100));
}
