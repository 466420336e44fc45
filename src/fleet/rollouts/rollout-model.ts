import { principalLabel } from '../../core/audit/principal-label';

/**
 * What a fleet operator declares to move devices' firmware and endpoints, as it is stored (the
 * same JSON in memory and in Redis) and shown (`/fleet/firmware`, `/fleet/rollouts`, the tools).
 * Every record has a `revision`, raised by each change, so that two operators changing one record
 * at once cannot undo each other silently (the store refuses the stale write).
 */

/** A firmware build devices may be offered. */
export interface FirmwareEntry {
  id: string;
  /** Digits and dots (see `firmwareVersionProblem`). */
  version: string;
  /** Where devices download the `.bin` (http or https). */
  url: string;
  /** Globs over board names (`BOARD_NAME`, the `User-Agent`'s first half): the build is offered only to these boards. */
  boards: string[];
  notes?: string;
  /** The principal that declared it: only they see it, and only their rollouts offer it. */
  owner: string;
  created_at: string;
  updated_at: string;
  revision: number;
}

/**
 * The devices a rollout is for: by id, by glob over ids, or a stable share of the owner's
 * devices. Ids and globs apply to devices the owner may reach (its own, and those its token's
 * `devices` globs grant); a share is always of the devices the owner owns.
 */
export type RolloutGroup = { devices: string[] } | { globs: string[] } | { percent: number };

/** Where a rollout moves devices' sessions, without reflashing (the firmware stores what its configuration answer says). */
export interface EndpointOverride {
  /** The `websocket.url` devices are given (ws or wss). */
  websocket_url?: string;
  /** The `mqtt.endpoint` devices are given (`host:port`), for devices on MQTT + UDP. */
  mqtt_endpoint?: string;
}

/** `active` offers; `paused` offers nothing until resumed; `stopped` offers nothing, for good. */
export type RolloutState = 'active' | 'paused' | 'stopped';

export interface Rollout {
  id: string;
  /** The firmware entry offered, the owner's own. */
  firmware_id?: string;
  /** With `firmware_id`: offer it even to devices that run a newer version (a rollback; the firmware's `force`). */
  force?: boolean;
  endpoint?: EndpointOverride;
  group: RolloutGroup;
  state: RolloutState;
  owner: string;
  created_at: string;
  updated_at: string;
  revision: number;
}

/** How a group is ranked when several rollouts name a device: the more specific wins. */
export function groupRank(group: RolloutGroup): number {
  if ('devices' in group) return 3;
  if ('globs' in group) return 2;
  return 1;
}

/** The kind of a group, for views and the audit log. */
export function groupKind(group: RolloutGroup): 'devices' | 'globs' | 'percent' {
  return 'devices' in group ? 'devices' : 'globs' in group ? 'globs' : 'percent';
}

/** A record as routes and tools show it: its owner as the audit log names principals (a token's name, never its digest). */
export function recordView<T extends { owner: string }>(record: T): T {
  return { ...record, owner: principalLabel(record.owner) };
}
