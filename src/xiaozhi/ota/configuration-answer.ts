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
  firmware?: { version: string; url: string };
  /** An unbound device's activation (`XIAOZHI_ACTIVATION=required`): it speaks the code and polls `<ota>/activate`. */
  activation?: ActivationSection;
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

/** The answer for a device, at `now`, reaching the gateway at `baseUrl`. */
export function configurationAnswer(config: GatewayConfig, baseUrl: string, now = new Date(), mqtt?: MqttSection): ConfigurationAnswer {
  const wsBase = baseUrl.replace(/^http/, 'ws');
  return {
    ...(mqtt ? { mqtt } : { websocket: { url: `${wsBase}${XIAOZHI_SESSION_PATH}`, token: config.xiaozhi.deviceToken ?? '' } }),
    server_time: { timestamp: now.getTime(), timezone_offset: timeZoneOffsetMinutes(config.tools.defaultTimezone, now) },
    ...(config.xiaozhi.firmware && { firmware: { ...config.xiaozhi.firmware } }),
  };
}
