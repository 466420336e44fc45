import { Injectable } from '@nestjs/common';
import type { IncomingMessage } from 'http';
import { DEVICE_ID_HEADER, DEVICE_ID_PARAMETER } from '../fleet/device-id';
import { UpgradeContext, UpgradeGuard, UpgradeRefusedException } from '../core/ws/upgrade-guard';
import { FRAMING_VERSIONS, FramingVersion } from './audio-framing';

const PROTOCOL_VERSION_HEADER = 'protocol-version';
/** For clients that cannot set headers (a browser's WebSocket): the query parameter in its place. */
const PROTOCOL_VERSION_PARAMETER = 'protocol_version';

interface XiaozhiRequest extends IncomingMessage {
  framing?: FramingVersion;
}

/** The binary framing an accepted upgrade asked for. */
export const framingOf = (request: IncomingMessage): FramingVersion => (request as XiaozhiRequest).framing ?? 1;

const first = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value[0] : value);

/**
 * What a xiaozhi device's upgrade must carry besides its token: its `Device-Id` (the firmware
 * always sends its MAC address; the fleet and its history hang on it) and a `Protocol-Version`
 * the gateway frames audio in (1, 2 or 3; 1 when absent, as the firmware's default). Either may
 * come as a query parameter (`device_id`, `protocol_version`) from a browser. Refusals are 400s
 * that say what is missing.
 */
@Injectable()
export class XiaozhiUpgradeGuard implements UpgradeGuard {
  canUpgrade(context: UpgradeContext): void {
    const { request, url } = context;
    if (first(request.headers[DEVICE_ID_HEADER]) === undefined && !url.searchParams.has(DEVICE_ID_PARAMETER))
      throw new UpgradeRefusedException(400, 'A xiaozhi device names itself with the Device-Id header (its MAC address)');
    const version = first(request.headers[PROTOCOL_VERSION_HEADER]) ?? url.searchParams.get(PROTOCOL_VERSION_PARAMETER) ?? '1';
    const framing = Number(version) as FramingVersion;
    if (!FRAMING_VERSIONS.includes(framing))
      throw new UpgradeRefusedException(400, `Protocol-Version ${version.slice(0, 16)}: the gateway frames audio in versions 1, 2 and 3`);
    (request as XiaozhiRequest).framing = framing;
  }
}
