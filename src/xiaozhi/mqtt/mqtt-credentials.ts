import { createHash, createHmac, timingSafeEqual } from 'crypto';
import { DEVICE_SECRET_PREFIX } from '../../core/auth/device-credential';
import { deviceIdProblem } from '../../fleet/device-id';

/** What the configuration answer gives a device to connect to the MQTT server with. */
export interface DeviceMqttCredentials {
  client_id: string;
  username: string;
  password: string;
  /** Where it publishes its messages: its own topic, the only one it may publish to. */
  publish_topic: string;
}

/** A device's uplink topic: `xiaozhi/<device id>/up`. */
export const uplinkTopic = (deviceId: string): string => `xiaozhi/${deviceId}/up`;
/** The topic the gateway's messages to a device carry (the firmware reads none: they are delivered to its connection, not subscribed to). */
export const downlinkTopic = (deviceId: string): string => `xiaozhi/${deviceId}/down`;

/**
 * Per-device MQTT credentials, derived, never stored: the client id and the username are the
 * device's id (its MAC address), the password an HMAC-SHA256 of the id under a key made from
 * `XIAOZHI_MQTT_SECRET` (or `XIAOZHI_DEVICE_TOKEN`). Every instance derives the same, so a device
 * may land on any replica; no two devices share a password, a password names its device only,
 * and changing the secret revokes them all (devices ask for new ones at their next boot).
 */
export class MqttCredentials {
  private readonly key: Buffer;

  constructor(secret: string) {
    this.key = createHash('sha256').update('xiaozhi-mqtt-credentials\0').update(secret).digest();
  }

  issue(deviceId: string): DeviceMqttCredentials {
    return { client_id: deviceId, username: deviceId, password: this.passwordOf(deviceId), publish_topic: uplinkTopic(deviceId) };
  }

  /**
   * The device a CONNECT proves with activation on (`XIAOZHI_ACTIVATION=required`): a bound
   * device's password is its own secret, which `deviceOfSecret` finds (the same secret then opens
   * its session); a derived password proves nothing, since activation hands none out.
   */
  static async checkDeviceSecret(
    clientId: string,
    username: string | undefined,
    password: Buffer | undefined,
    deviceOfSecret: (secret: string) => Promise<string | undefined>,
  ): Promise<string | undefined> {
    if (username !== clientId || deviceIdProblem(clientId) !== undefined || password === undefined || password.length > 256) return undefined;
    const secret = password.toString('utf8');
    if (!secret.startsWith(DEVICE_SECRET_PREFIX)) return undefined;
    return (await deviceOfSecret(secret)) === clientId ? clientId : undefined;
  }

  /** The device a CONNECT's client id, username and password prove, or `undefined`. */
  check(clientId: string, username: string | undefined, password: Buffer | undefined): string | undefined {
    if (username !== clientId || deviceIdProblem(clientId) !== undefined || password === undefined) return undefined;
    const expected = Buffer.from(this.passwordOf(clientId));
    return password.length === expected.length && timingSafeEqual(password, expected) ? clientId : undefined;
  }

  private passwordOf(deviceId: string): string {
    return createHmac('sha256', this.key).update(`mqtt-password\0${deviceId}`).digest('base64url');
  }
}
