import type { GatewayConfig } from '../../config/gateway-config';
import type { ActivationSection } from '../../fleet/activation/activation.service';
import type { DeviceMqttCredentials } from '../mqtt/mqtt-credentials';

/** The path of the xiaozhi WebSocket session, as the configuration answer gives it. */
export const XIAOZHI_SESSION_PATH = '/xiaozhi/v1/';

/**
 * The configuration answer (`main/ota.cc`): where the device's session is and with which token,
 * the time, and the firmware it should run. The firmware stores every field of `websocket` in
 * its settings and connects there; it adds `timezone_offset` to `timestamp` to set its clock to
 * local time; it upgrades when `firmware.version` is newer than its own.
 */
export interface ConfigurationAnswer {
  /** `token` is absent when the device keeps the one it stored (its own secret, given once: see `device-credential-answer.ts`). */
  websocket?: { url: string; token?: string };
  /** With `XIAOZHI_TRANSPORT=mqtt`, in place of `websocket`: the firmware then speaks MQTT + UDP. */
  mqtt?: MqttSection;
  server_time: { timestamp: number; timezone_offset: number };
  firmware?: FirmwareBlock;
  /** An unbound device's activation (`XIAOZHI_ACTIVATION=required`): it speaks the code and polls `<ota>/activate`. */
  activation?: ActivationSection;
}

/** The `firmware` block: the firmware takes it when `version` is newer than its own, or whatever it is with `force: 1`. */
export interface FirmwareBlock {
  version: string;
  url: string;
  force?: 1;
}

/** What the fleet's rollouts change in one device's answer (`src/fleet/rollouts`). */
export interface AnswerOverrides {
  /** In place of `XIAOZHI_FIRMWARE_*`: the device's group's firmware, or `null` for none (it already runs it, or the rollouts could not be read). */
  firmware?: FirmwareBlock | null;
  /** The session's URL, in place of this gateway's: the firmware stores it, so the device moves without reflashing. */
  websocketUrl?: string;
  /** The MQTT endpoint (`host:port`), in place of this gateway's. */
  mqttEndpoint?: string;
}

/** The `mqtt` section: the MQTT server's public endpoint and the device's own credentials (`main/protocols/mqtt_protocol.cc` reads these names); `password` absent when the device keeps the one it stored. */
export type MqttSection = Omit<DeviceMqttCredentials, 'password'> & { password?: string; endpoint: string; keepalive: number };

/** The gateway's base URL as devices reach it: `PUBLIC_URL`, else the request's own host (right when devices reach the gateway directly). */
export function publicBaseUrl(config: GatewayConfig, host: string | undefined, encrypted: boolean): string {
  return config.auth.publicUrl ?? `${encrypted ? 'https' : 'http'}://${host ?? `localhost:${config.server.port}`}`;
}

/** Minutes `timeZone` is ahead of UTC at `at` (negative west of Greenwich). */
export function timeZoneOffsetMinutes(timeZone: string, at: Date): number {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric' })
      .formatToParts(at)
      .map(({ type, value }) => [type, Number(value)]),
  );
  const local = Date.UTC(parts.year, parts.month - 1, parts.day, parts.hour, parts.minute);
  return Math.round((local - Math.floor(at.getTime() / 60_000) * 60_000) / 60_000);
}

/** The answer for a device, at `now`, reaching the gateway at `baseUrl`, with what its rollouts change. */
export function configurationAnswer(
  config: GatewayConfig,
  baseUrl: string,
  now = new Date(),
  mqtt?: MqttSection,
  overrides: AnswerOverrides = {},
): ConfigurationAnswer {
  const wsBase = baseUrl.replace(/^http/, 'ws');
  const firmware = overrides.firmware === undefined ? config.xiaozhi.firmware : (overrides.firmware ?? undefined);
  return {
    ...(mqtt
      ? { mqtt: overrides.mqttEndpoint === undefined ? mqtt : { ...mqtt, endpoint: overrides.mqttEndpoint } }
      : { websocket: { url: overrides.websocketUrl ?? `${wsBase}${XIAOZHI_SESSION_PATH}`, token: config.xiaozhi.deviceToken ?? '' } }),
    server_time: { timestamp: now.getTime(), timezone_offset: timeZoneOffsetMinutes(config.tools.defaultTimezone, now) },
    ...(firmware && { firmware: { ...firmware } }),
  };
}
