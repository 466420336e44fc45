/**
 * Versions as the xiaozhi firmware reads them (`Ota::ParseVersion`, `Ota::IsNewVersionAvailable`
 * in `main/ota.cc`): dot-separated numbers, compared number by number, the longer one newer when
 * one is the other's prefix. The firmware parses each part with `std::stoi`, which aborts the
 * device on a part that does not start with a digit: a version offered to devices is therefore
 * digits and dots only ({@link firmwareVersionProblem}).
 */

/** A version a device may be offered: 1 to 8 parts of 1 to 9 digits (a part fits the firmware's `int`). */
const OFFERABLE_VERSION = /^\d{1,9}(\.\d{1,9}){0,7}$/;

/** Why `version` cannot be offered to a device, or `undefined` when it can. */
export function firmwareVersionProblem(version: unknown): string | undefined {
  if (typeof version !== 'string' || !OFFERABLE_VERSION.test(version))
    return 'A firmware version is 1 to 8 numbers separated by dots, such as 2.4.2 (the firmware compares them number by number and cannot read anything else)';
  return undefined;
}

/**
 * The numbers of a version as the firmware reads them: each part's leading digits (`stoi` reads
 * `3-rc1` as 3); `undefined` when a part has none, since the firmware cannot compare it either.
 */
export function versionParts(version: string): number[] | undefined {
  const parts: number[] = [];
  for (const part of version.split('.')) {
    const digits = /^\s*[+-]?\d+/.exec(part);
    if (!digits) return undefined;
    parts.push(Number.parseInt(digits[0], 10));
  }
  return parts;
}

/** Whether the firmware running `current` would take `offered` as an upgrade (`IsNewVersionAvailable`). */
export function isNewerVersion(offered: string, current: string): boolean {
  const newer = versionParts(offered);
  const running = versionParts(current);
  if (!newer || !running) return false;
  for (let i = 0; i < Math.min(newer.length, running.length); i++) {
    if (newer[i] > running[i]) return true;
    if (newer[i] < running[i]) return false;
  }
  return newer.length > running.length;
}

/** Whether two versions are the same to the firmware (neither is newer than the other). */
export function sameVersion(a: string, b: string): boolean {
  return versionParts(a) !== undefined && versionParts(b) !== undefined && !isNewerVersion(a, b) && !isNewerVersion(b, a);
}

/** What a device runs, from its `User-Agent` (`board/version`, `SystemInfo::GetUserAgent`). */
export interface RunningFirmware {
  board?: string;
  version?: string;
}

/** The board and version of a `User-Agent`; `{}` for one that is not `board/version`. */
export function parseUserAgent(userAgent: string | undefined): RunningFirmware {
  if (userAgent === undefined) return {};
  const slash = userAgent.indexOf('/');
  if (slash <= 0 || slash === userAgent.length - 1) return {};
  const board = userAgent.slice(0, slash).trim();
  const version = userAgent.slice(slash + 1).trim();
  return { ...(board !== '' && { board }), ...(version !== '' && !/\s/.test(version) && { version }) };
}
