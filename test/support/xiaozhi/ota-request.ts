import { createHmac } from 'crypto';
import { request as httpRequest, IncomingMessage } from 'http';
import { request as httpsRequest } from 'https';
import { BoardIdentity, systemInfoJson, userAgent } from './board-info';
import { isJsonObject, JsonObject, objectItem, valueInt } from './cjson';

/** What a server answered the configuration request. */
export interface OtaAnswer {
  status: number;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  body: any;
  text: string;
}

/** What the firmware keeps of an OTA answer (Ota::CheckVersion). */
export interface StoredConfiguration {
  /** Every string and number field of `websocket`, kept across answers as the firmware's settings are; numbers as `valueint`. */
  websocket: Record<string, string | number>;
  mqtt: Record<string, string | number>;
  /** The last answer had a `websocket` object. */
  hasWebsocket: boolean;
  /** The last answer had an `mqtt` object: the firmware then speaks MQTT + UDP, whatever `websocket` says. */
  hasMqtt: boolean;
  activation?: JsonObject;
  firmware?: JsonObject;
  serverTime?: JsonObject;
}

export function emptyConfiguration(): StoredConfiguration {
  return { websocket: {}, mqtt: {}, hasWebsocket: false, hasMqtt: false };
}

const OTA_TIMEOUT_MS = 10_000;

/**
 * The boot-time request of Ota::CheckVersion: POST with the system information JSON (GET
 * without a body), headers in the firmware's order. `Content-Type` is sent with GET too, as the
 * firmware sets it on every request.
 */
export function requestOta(otaUrl: string, method: 'POST' | 'GET', identity: BoardIdentity): Promise<OtaAnswer> {
  return sendOtaRequest(otaUrl, method, identity, method === 'POST' ? Buffer.from(systemInfoJson(identity)) : undefined);
}

/**
 * Ota::Activate: `POST <ota url>activate` (a `/` added when the URL has none) with the headers of
 * every OTA request and Ota::GetActivationPayload as the body: `{}` for a board without a serial
 * number, else the HMAC-SHA256 (hex) of the challenge under the eFuse key, `key` here.
 */
export function requestActivation(otaUrl: string, identity: BoardIdentity, challenge: string, key?: Buffer): Promise<OtaAnswer> {
  const url = otaUrl.endsWith('/') ? `${otaUrl}activate` : `${otaUrl}/activate`;
  const payload = identity.serialNumber
    ? JSON.stringify({
        algorithm: 'hmac-sha256',
        serial_number: identity.serialNumber,
        challenge,
        hmac: key ? createHmac('sha256', key).update(challenge).digest('hex') : '',
      })
    : '{}';
  return sendOtaRequest(url, 'POST', identity, Buffer.from(payload));
}

/**
 * What Activation::ShowActivationCode does with an answer's `activation`: the message shown and
 * alerted, then one digit sound per digit of the code (anything else in it is not spoken).
 */
export function spokenActivation(activation: JsonObject | undefined): { message: string; digits: string[] } | undefined {
  if (!activation) return undefined;
  const message = objectItem(activation, 'message');
  const code = objectItem(activation, 'code');
  if (typeof code !== 'string') return undefined;
  return { message: typeof message === 'string' ? message : '', digits: [...code].filter((digit) => digit >= '0' && digit <= '9') };
}

function sendOtaRequest(otaUrl: string, method: 'POST' | 'GET', identity: BoardIdentity, body: Buffer | undefined): Promise<OtaAnswer> {
  const headers: [string, string][] = [
    ['Activation-Version', identity.serialNumber ? '2' : '1'],
    ['Device-Id', identity.deviceId],
    ['Client-Id', identity.clientId],
    ...(identity.serialNumber ? [['Serial-Number', identity.serialNumber] as [string, string]] : []),
    ['User-Agent', userAgent(identity)],
    ['Accept-Language', identity.language],
    ['Content-Type', 'application/json'],
    ...(body ? [['Content-Length', String(body.length)] as [string, string]] : []),
  ];
  const url = new URL(otaUrl);
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const request = send(url, { method, headers: Object.fromEntries(headers), timeout: OTA_TIMEOUT_MS }, (response: IncomingMessage) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', reject);
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: response.statusCode ?? 0, body: parseJson(text), text });
      });
    });
    request.on('timeout', () => request.destroy(new Error(`The OTA request to ${otaUrl} got no answer within ${OTA_TIMEOUT_MS} ms`)));
    request.on('error', reject);
    request.end(body);
  });
}

/**
 * Updates `stored` from a 200 answer as the firmware does: the `websocket` and `mqtt` objects'
 * string and number fields are written to settings (a token sent as a number is stored as an
 * int, so the string read of `token` finds nothing), other sections are remembered.
 */
export function storeOtaAnswer(stored: StoredConfiguration, answer: OtaAnswer): void {
  if (answer.status !== 200 || !isJsonObject(answer.body)) return;
  const section = (name: string) => {
    const value = objectItem(answer.body, name);
    return isJsonObject(value) ? value : undefined;
  };
  const mqtt = section('mqtt');
  const websocket = section('websocket');
  stored.hasMqtt = mqtt !== undefined;
  if (mqtt) storeSection(stored.mqtt, mqtt);
  stored.hasWebsocket = websocket !== undefined;
  if (websocket) storeSection(stored.websocket, websocket);
  stored.activation = section('activation');
  stored.firmware = section('firmware');
  stored.serverTime = section('server_time');
}

function storeSection(settings: Record<string, string | number>, section: JsonObject): void {
  for (const [key, value] of Object.entries(section)) {
    if (typeof value === 'string') settings[key] = value;
    else if (typeof value === 'number') settings[key] = valueInt(value);
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
