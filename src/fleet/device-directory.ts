import { Observable, Subject } from 'rxjs';
import type { DeviceEntry } from './device-entry';

/** A device came online (`entry`), changed its tools (`entry`), or went offline (no `entry`). */
export interface DirectoryChange {
  id: string;
  entry?: DeviceEntry;
}

/**
 * Which devices are online, on which instance, with which tools: read from a mirror in memory
 * (a lookup on a tool call costs no round trip), written through to the shared store. In memory
 * on one instance; in Redis across replicas, where an instance that dies without saying goodbye
 * has its devices dropped once its liveness key expires.
 */
export interface DeviceDirectory {
  /** This instance's id, as entries name it. */
  readonly instanceId: string;
  /** Every change of the mirror, local or from another instance. */
  readonly changes: Observable<DirectoryChange>;
  /** Fills the mirror and starts keeping it current. */
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Writes `entry` as the device's; returns the entry it replaced (another connection of the same id), if any. */
  claim(entry: DeviceEntry): Promise<DeviceEntry | undefined>;
  /** Rewrites the entry's tools, if the device is still that connection's. */
  update(entry: DeviceEntry): Promise<void>;
  /** Removes the device if it is still `connectionId`'s; returns whether it was. */
  release(id: string, connectionId: string): Promise<boolean>;
  /** The device from the mirror. */
  lookup(id: string): DeviceEntry | undefined;
  /** The device from the shared store (a decision that must not trust a mirror a message behind: who owns an id). */
  fetch(id: string): Promise<DeviceEntry | undefined>;
  /** The principal that last connected the device, online or not (`''`: anonymous); `undefined` if it never connected. */
  lastOwner(id: string): Promise<string | undefined>;
  /** Every device online, from the mirror. */
  all(): IterableIterator<DeviceEntry>;
  readonly size: number;
  /** Whether `instance` is alive: this one always; others while their liveness key lasts. */
  isAlive(instance: string): boolean;
}

/** The directory of one instance alone: the mirror is the store. */
export class MemoryDeviceDirectory implements DeviceDirectory {
  private readonly entries = new Map<string, DeviceEntry>();
  private readonly owners = new Map<string, string>();
  private readonly changeStream = new Subject<DirectoryChange>();
  readonly changes = this.changeStream.asObservable();

  constructor(readonly instanceId: string) {}

  async start(): Promise<void> {}

  async stop(): Promise<void> {
    this.changeStream.complete();
  }

  async claim(entry: DeviceEntry): Promise<DeviceEntry | undefined> {
    const replaced = this.entries.get(entry.id);
    this.entries.set(entry.id, entry);
    this.owners.set(entry.id, entry.principal ?? '');
    this.changeStream.next({ id: entry.id, entry });
    return replaced;
  }

  async update(entry: DeviceEntry): Promise<void> {
    if (this.entries.get(entry.id)?.connectionId !== entry.connectionId) return;
    this.entries.set(entry.id, entry);
    this.changeStream.next({ id: entry.id, entry });
  }

  async release(id: string, connectionId: string): Promise<boolean> {
    if (this.entries.get(id)?.connectionId !== connectionId) return false;
    this.entries.delete(id);
    this.changeStream.next({ id });
    return true;
  }

  lookup(id: string): DeviceEntry | undefined {
    return this.entries.get(id);
  }

  async lastOwner(id: string): Promise<string | undefined> {
    return this.owners.get(id);
  }

  async fetch(id: string): Promise<DeviceEntry | undefined> {
    return this.entries.get(id);
  }

  all(): IterableIterator<DeviceEntry> {
    return this.entries.values();
  }

  get size(): number {
    return this.entries.size;
  }

  isAlive(instance: string): boolean {
    return instance === this.instanceId;
  }
}
