import type { Logger } from '@nestjs/common';
import { isPlainObject } from '../../core/plain-object';
import type { DeviceRollouts } from '../../fleet/rollouts/device-rollouts';
import type { AnswerOverrides } from './configuration-answer';
import type { DeviceBoot } from './device-boot-records';

/** Longest board name or version taken from the posted system information. */
const MAX_REPORTED_CHARS = 64;

/**
 * What the fleet's rollouts change in a device's configuration answer: the firmware of its group
 * for its board (none when it runs it already), and a moved endpoint. A device no rollout names
 * keeps the gateway's answer (`XIAOZHI_FIRMWARE_*` as the fallback). When the rollouts cannot be
 * read (Redis down), the answer offers no firmware at all rather than the fallback, which could
 * take a device its rollout holds back to another version.
 */
export async function rolloutOverrides(rollouts: DeviceRollouts | undefined, boot: DeviceBoot, body: unknown, logger: Logger): Promise<AnswerOverrides> {
  if (!rollouts) return {};
  try {
    const offer = await rollouts.offerFor({ id: boot.deviceId, userAgent: boot.userAgent, ...reportedFirmware(body) });
    return {
      ...(offer.firmware && { firmware: offer.firmware.offer ?? null }),
      ...(offer.endpoint?.websocket_url !== undefined && { websocketUrl: offer.endpoint.websocket_url }),
      ...(offer.endpoint?.mqtt_endpoint !== undefined && { mqttEndpoint: offer.endpoint.mqtt_endpoint }),
    };
  } catch (error) {
    logger.warn(`Device ${boot.deviceId}: its rollouts could not be read, no firmware offered: ${(error as Error).message}`);
    return { firmware: null };
  }
}

/** The board name and application version of the posted system information (`Board::GetSystemInfoJson`), for a device whose `User-Agent` does not say. */
function reportedFirmware(body: unknown): { board?: string; version?: string } {
  if (!isPlainObject(body)) return {};
  const text = (value: unknown) => (typeof value === 'string' && value !== '' && value.length <= MAX_REPORTED_CHARS ? value : undefined);
  const board = isPlainObject(body.board) ? text(body.board.name) : undefined;
  const version = isPlainObject(body.application) ? text(body.application.version) : undefined;
  return { ...(board !== undefined && { board }), ...(version !== undefined && { version }) };
}
