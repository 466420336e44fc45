import { GatewayError, GatewayErrorCode } from '../../core/errors/gateway-error';
import { isPlainObject } from '../../core/plain-object';
import { deviceIdProblem, isDeviceGlob } from '../device-id';
import { firmwareVersionProblem } from './firmware-version';
import type { EndpointOverride, RolloutGroup } from './rollout-model';

/** Ids a `devices` group may list: a set lookup each, so a generous bound. */
export const MAX_GROUP_DEVICES = 1000;
/** Globs a `globs` group may hold: each is tested against a device at every configuration request (bounded, see `RolloutResolver`). */
export const MAX_GROUP_GLOBS = 16;
/** Board globs a firmware entry may hold. */
export const MAX_BOARDS = 16;
const MAX_URL_CHARS = 512;
const MAX_NOTES_CHARS = 1000;

/** A record's id, chosen by its author or made up: letters, digits, `.`, `_`, `-`. */
const RECORD_ID = /^[A-Za-z0-9_.-]{1,64}$/;
/** A board name glob: the characters of `BOARD_NAME`s (`bread-compact-wifi`, `esp-box-3`), and `*`. */
const BOARD_GLOB = /^[A-Za-z0-9_.*+-]{1,64}$/;
/** `host:port`, the host a name or an IPv4 address. */
const MQTT_ENDPOINT = /^([A-Za-z0-9-]+\.)*[A-Za-z0-9-]+:(\d{1,5})$/;

const refuse = (message: string): GatewayError => new GatewayError(GatewayErrorCode.INVALID_MESSAGE, message);

/** A firmware entry as `POST /fleet/firmware` and `fleet_firmware_add` take it (checked by {@link firmwareInput}). */
export const FIRMWARE_INPUT_SCHEMA = {
  type: 'object',
  properties: {
    id: { type: 'string', description: 'Its id (letters, digits, . _ -); made up when absent', examples: ['box3-2.5.0'] },
    version: { type: 'string', description: 'The version, numbers separated by dots', examples: ['2.5.0'] },
    url: { type: 'string', description: 'The http or https URL of the .bin' },
    boards: {
      type: 'array',
      items: { type: 'string' },
      maxItems: MAX_BOARDS,
      description: 'Board names or globs; ["*"] for every board',
      examples: [['esp-box-3']],
    },
    notes: { type: 'string' },
  },
  required: ['version', 'url', 'boards'],
  additionalProperties: false,
} as const;

/** A rollout as `POST /fleet/rollouts` and `fleet_rollout_create` take it (checked by {@link rolloutInput}). */
export const ROLLOUT_INPUT_SCHEMA = {
  type: 'object',
  properties: {
    id: { type: 'string', description: 'Its id (letters, digits, . _ -); made up when absent' },
    firmware_id: { type: 'string', description: 'The firmware entry to offer' },
    force: { type: 'boolean', description: 'Offer it even to devices that run a newer version (a rollback)' },
    endpoint: {
      type: 'object',
      properties: { websocket_url: { type: 'string', description: 'ws:// or wss:// URL' }, mqtt_endpoint: { type: 'string', description: 'host:port' } },
      additionalProperties: false,
    },
    devices: { type: 'array', items: { type: 'string' }, maxItems: MAX_GROUP_DEVICES },
    globs: { type: 'array', items: { type: 'string' }, maxItems: MAX_GROUP_GLOBS, examples: [['kitchen-*']] },
    percent: { type: 'number', minimum: 0, maximum: 100 },
    state: { type: 'string', enum: ['active', 'paused'], default: 'active' },
  },
  additionalProperties: false,
} as const;

/** What may be said of a new firmware entry. */
export interface FirmwareInput {
  id?: string;
  version: string;
  url: string;
  boards: string[];
  notes?: string;
}

/** What may be changed in one: not its version (a new version is a new entry, so no rollout changes what it offers under it). */
export type FirmwareChange = Partial<Pick<FirmwareInput, 'url' | 'boards' | 'notes'>>;

export interface RolloutInput {
  id?: string;
  firmware_id?: string;
  force?: boolean;
  endpoint?: EndpointOverride;
  group: RolloutGroup;
  state: 'active' | 'paused';
}

/** The body of `POST /fleet/firmware` (and the `firmware_add` tool), checked; `INVALID_MESSAGE` naming what is wrong. */
export function firmwareInput(body: unknown): FirmwareInput {
  const fields = objectOf(body, ['id', 'version', 'url', 'boards', 'notes']);
  const problem = firmwareVersionProblem(fields.version);
  if (problem) throw refuse(`version: ${problem}`);
  if (fields.url === undefined) throw refuse('url is required');
  if (fields.boards === undefined) throw refuse('boards is required: the board names (globs) this build is for, ["*"] for every board');
  return {
    ...optionalId(fields.id),
    version: fields.version as string,
    ...firmwareChange({ url: fields.url, boards: fields.boards, notes: fields.notes }),
  } as FirmwareInput;
}

/** The body of `PATCH /fleet/firmware/<id>`. */
export function firmwareChange(body: unknown): FirmwareChange {
  const fields = objectOf(body, ['url', 'boards', 'notes']);
  const change: FirmwareChange = {};
  if (fields.url !== undefined) change.url = urlOf('url', fields.url, ['http:', 'https:']);
  if (fields.boards !== undefined) change.boards = boardsOf(fields.boards);
  if (fields.notes !== undefined) {
    if (typeof fields.notes !== 'string' || fields.notes.length > MAX_NOTES_CHARS)
      throw refuse(`notes must be a string of at most ${MAX_NOTES_CHARS} characters`);
    change.notes = fields.notes;
  }
  return change;
}

/** The body of `POST /fleet/rollouts` (and the `rollout_create` tool). */
export function rolloutInput(body: unknown): RolloutInput {
  const fields = objectOf(body, ['id', 'firmware_id', 'force', 'endpoint', 'devices', 'globs', 'percent', 'state']);
  if (fields.firmware_id !== undefined && (typeof fields.firmware_id !== 'string' || !RECORD_ID.test(fields.firmware_id)))
    throw refuse('firmware_id must be the id of one of your firmware entries');
  if (fields.force !== undefined && typeof fields.force !== 'boolean') throw refuse('force must be true or false');
  if (fields.force && fields.firmware_id === undefined) throw refuse('force goes with firmware_id');
  const endpoint = fields.endpoint === undefined ? undefined : endpointOf(fields.endpoint);
  if (fields.firmware_id === undefined && endpoint === undefined) throw refuse('A rollout offers a firmware_id, an endpoint, or both');
  if (fields.state !== undefined && fields.state !== 'active' && fields.state !== 'paused')
    throw refuse('state must be "active" or "paused" (the default is active)');
  return {
    ...optionalId(fields.id),
    ...(fields.firmware_id !== undefined && { firmware_id: fields.firmware_id as string }),
    ...(fields.force === true && { force: true }),
    ...(endpoint && { endpoint }),
    group: groupOf(fields),
    state: (fields.state as 'active' | 'paused' | undefined) ?? 'active',
  };
}

/** A share in percent: 0 to 100, in hundredths at most. */
export function percentOf(value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 100) throw refuse('percent must be a number from 0 to 100');
  if (Math.abs(Math.round(value * 100) - value * 100) > 1e-6) throw refuse('percent is counted in hundredths: 12.5 or 0.25, not 0.125');
  return Math.round(value * 100) / 100;
}

function groupOf(fields: Record<string, unknown>): RolloutGroup {
  const given = (['devices', 'globs', 'percent'] as const).filter((name) => fields[name] !== undefined);
  if (given.length !== 1) throw refuse('Name the group with exactly one of devices (ids), globs (over ids) and percent (a share of your devices)');
  if (fields.percent !== undefined) return { percent: percentOf(fields.percent) };
  if (fields.devices !== undefined) {
    const ids = listOf('devices', fields.devices, MAX_GROUP_DEVICES);
    for (const id of ids) {
      const problem = deviceIdProblem(id);
      if (problem) throw refuse(`devices: ${JSON.stringify(String(id).slice(0, 80))}: ${problem}`);
    }
    return { devices: [...new Set(ids as string[])] };
  }
  const globs = listOf('globs', fields.globs, MAX_GROUP_GLOBS);
  for (const glob of globs)
    if (!isDeviceGlob(glob))
      throw refuse(`globs: ${JSON.stringify(String(glob).slice(0, 80))} is not a device glob (device id characters and at least one *, 128 at most)`);
  return { globs: [...new Set(globs as string[])] };
}

function endpointOf(value: unknown): EndpointOverride {
  const fields = objectOf(value, ['websocket_url', 'mqtt_endpoint'], 'endpoint');
  const endpoint: EndpointOverride = {};
  if (fields.websocket_url !== undefined) endpoint.websocket_url = urlOf('endpoint.websocket_url', fields.websocket_url, ['ws:', 'wss:']);
  if (fields.mqtt_endpoint !== undefined) {
    const match = typeof fields.mqtt_endpoint === 'string' && fields.mqtt_endpoint.length <= 255 ? MQTT_ENDPOINT.exec(fields.mqtt_endpoint) : null;
    const port = match ? Number(match[2]) : 0;
    if (!match || port < 1 || port > 65535) throw refuse('endpoint.mqtt_endpoint must be host:port, such as mqtt.example.com:1883');
    endpoint.mqtt_endpoint = fields.mqtt_endpoint as string;
  }
  if (endpoint.websocket_url === undefined && endpoint.mqtt_endpoint === undefined) throw refuse('endpoint needs websocket_url, mqtt_endpoint, or both');
  return endpoint;
}

function boardsOf(value: unknown): string[] {
  const boards = listOf('boards', value, MAX_BOARDS);
  for (const board of boards)
    if (typeof board !== 'string' || !BOARD_GLOB.test(board))
      throw refuse(`boards: ${JSON.stringify(String(board).slice(0, 80))} is not a board name or glob (letters, digits, . _ + - and *, 64 at most)`);
  return [...new Set(boards as string[])];
}

function urlOf(name: string, value: unknown, protocols: string[]): string {
  const words = protocols.map((protocol) => protocol.slice(0, -1)).join(' or ');
  if (typeof value !== 'string' || value.length > MAX_URL_CHARS) throw refuse(`${name} must be a ${words} URL of at most ${MAX_URL_CHARS} characters`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw refuse(`${name} must be a ${words} URL: ${JSON.stringify(value.slice(0, 80))} is not a URL`);
  }
  if (!protocols.includes(url.protocol)) throw refuse(`${name} must be a ${words} URL, not ${url.protocol}`);
  if (url.username !== '' || url.password !== '') throw refuse(`${name} must not hold credentials: every device is given it`);
  return value;
}

function listOf(name: string, value: unknown, max: number): unknown[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > max) throw refuse(`${name} must be a list of 1 to ${max} items`);
  return value;
}

function optionalId(value: unknown): { id?: string } {
  if (value === undefined) return {};
  if (typeof value !== 'string' || !RECORD_ID.test(value)) throw refuse('id must be 1 to 64 letters, digits, ".", "_" or "-"');
  return { id: value };
}

function objectOf(value: unknown, allowed: string[], name = 'The body'): Record<string, unknown> {
  if (!isPlainObject(value)) throw refuse(`${name} must be a JSON object`);
  const unknown = Object.keys(value).find((key) => !allowed.includes(key));
  if (unknown !== undefined) throw refuse(`${name} has a field it does not take: ${JSON.stringify(unknown.slice(0, 40))} (it takes ${allowed.join(', ')})`);
  return value as Record<string, unknown>;
}
