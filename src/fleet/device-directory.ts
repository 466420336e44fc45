import { Observable, Subject } from 'rxjs';
import type { DeviceEntry } from './device-entry';

/** A device came online (`entry`), changed its tools (`entry`), or went offline (no `entry`). */
export interface DirectoryChange {
  id: string;
  entry?: DeviceEntry;
}

/**
 * How long a new owner's claim lasts before its socket opens: an upgrade that an id was admitted
 * for but that never became a connection (a cap refused it, the client vanished) frees the id
 * again soon, instead of keeping it for the whole lapse.
 */
export const ADMISSION_MS = 60_000;

/** What {@link DeviceDirectory.disown} did. */
export type Disowned = 'released' | 'online' | 'not-owner';

/** What {@link DeviceDirectory.bind} did: `taken` when another principal holds the id (bound to it, or connected as it). */
export type Bound = 'bound' | 'taken';

/**
 * Which devices are online, on which instance, with which tools, and which principal owns each
 * id: read from a mirror in memory (a lookup on a tool call costs no round trip), written through
 * to the shared store. In memory on one instance; in Redis across replicas, where an instance that
 * dies without saying goodbye has its devices dropped once its liveness key expires.
 *
 * An id belongs to the first principal that connects as it, online or not: held pushes and
 * reminders are its owner's, and another principal cannot take the id until the owner releases
 * it ({@link disown}) or the ownership lapses, `lapseMs` after the device's last connection ended
 * and once nothing is pending for it ({@link keepOwned}).
 */
export interface DeviceDirectory {
  /** This instance's id, as entries name it. */
  readonly instanceId: string;
  /** Every change of the mirror, local or from another instance. */
  readonly changes: Observable<DirectoryChange>;
  /**
   * Whether the shared store holds every device this instance holds. False from the moment the
   * store may have lost them (its connection dropped, it came back empty) until they are all
   * registered again: readiness reports it.
   */
  readonly complete: boolean;
  /** Fills the mirror and starts keeping it current. */
  start(): Promise<void>;
  stop(): Promise<void>;
  /**
   * The owner of `id`, made `principal` if the id had none, in one atomic step (two principals
   * connecting as a fresh id at once: one owns it, the other is told who does). A new ownership is
   * provisional ({@link ADMISSION_MS}) until {@link claim}.
   */
  admit(id: string, principal: string): Promise<string>;
  /** Writes `entry` as the device's, and keeps its ownership while it is online; returns the entry it replaced (another connection of the same id), if any. */
  claim(entry: DeviceEntry): Promise<DeviceEntry | undefined>;
  /** Rewrites the entry's tools, if the device is still that connection's. */
  update(entry: DeviceEntry): Promise<void>;
  /** Removes the device if it is still `connectionId`'s, and starts its ownership's lapse; returns whether it was. */
  release(id: string, connectionId: string): Promise<boolean>;
  /** The device from the mirror. */
  lookup(id: string): DeviceEntry | undefined;
  /** The principal that owns `id`, online or not; `undefined` if nobody does. */
  owner(id: string): Promise<string | undefined>;
  /** Something is pending for `id` until `untilMs` (a held push, a reminder): its ownership lasts at least that long, if `owner` still owns it. */
  keepOwned(id: string, owner: string, untilMs: number): Promise<void>;
  /** The owner gives the id up (only while it is offline): another principal may connect as it. */
  disown(id: string, principal: string): Promise<Disowned>;
  /**
   * An activated device's id becomes `principal`'s for good: no lapse, online or not, until
   * {@link unbind}. Refused (`taken`) while the id is bound to another principal, or another
   * principal's connection holds it.
   */
  bind(id: string, principal: string): Promise<Bound>;
  /** Ends `principal`'s binding of the id: an offline id is free at once, an online one lapses as usual once its connection ends. Whether it was bound to `principal`. */
  unbind(id: string, principal: string): Promise<boolean>;
  /** Every device online, from the mirror. */
  all(): IterableIterator<DeviceEntry>;
  readonly size: number;
  /** Whether `instance` is alive: this one always; others while their liveness key lasts. */
  isAlive(instance: string): boolean;
}

/** Who owns an id, in memory. */
interface Ownership {
  principal: string;
  /** Epoch ms until which something is pending for the device. */
  pendingUntil: number;
  /** Epoch ms at which it lapses, pending aside; `undefined` while the device is online, and while it is bound. */
  lapsesAt?: number;
  /** Bound by activation: it never lapses. */
  bound?: boolean;
}

/** The directory of one instance alone: the mirror is the store. */
export class MemoryDeviceDirectory implements DeviceDirectory {
  private readonly entries = new Map<string, DeviceEntry>();
  private readonly owners = new Map<string, Ownership>();
  /** Owners kept when the last sweep of lapsed ones ran: the next runs once there are twice as many. */
  private sweptAt = 0;
  private readonly changeStream = new Subject<DirectoryChange>();
  readonly changes = this.changeStream.asObservable();
  readonly complete = true;

  constructor(
    readonly instanceId: string,
    private readonly lapseMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  async start(): Promise<void> {}

  async stop(): Promise<void> {
    this.changeStream.complete();
  }

  async admit(id: string, principal: string): Promise<string> {
    if (this.owners.size >= Math.max(1024, 2 * this.sweptAt)) this.sweepLapsed();
    const owner = this.ownership(id);
    if (owner) return owner.principal;
    this.owners.set(id, { principal, pendingUntil: 0, lapsesAt: this.now() + ADMISSION_MS });
    return principal;
  }

  async claim(entry: DeviceEntry): Promise<DeviceEntry | undefined> {
    const replaced = this.entries.get(entry.id);
    this.entries.set(entry.id, entry);
    const owner = this.ownership(entry.id);
    if (owner) owner.lapsesAt = undefined;
    else this.owners.set(entry.id, { principal: entry.owner ?? entry.principal ?? '', pendingUntil: 0 });
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
    const owner = this.owners.get(id);
    if (owner && !owner.bound) owner.lapsesAt = this.now() + this.lapseMs;
    this.changeStream.next({ id });
    return true;
  }

  lookup(id: string): DeviceEntry | undefined {
    return this.entries.get(id);
  }

  async owner(id: string): Promise<string | undefined> {
    return this.ownership(id)?.principal;
  }

  async keepOwned(id: string, owner: string, untilMs: number): Promise<void> {
    const ownership = this.ownership(id);
    if (ownership?.principal === owner) ownership.pendingUntil = Math.max(ownership.pendingUntil, untilMs);
  }

  async disown(id: string, principal: string): Promise<Disowned> {
    if (this.entries.has(id)) return 'online';
    if (this.ownership(id)?.principal !== principal) return 'not-owner';
    this.owners.delete(id);
    return 'released';
  }

  async bind(id: string, principal: string): Promise<Bound> {
    const owner = this.ownership(id);
    if (owner && owner.principal !== principal && (owner.bound || this.entries.has(id))) return 'taken';
    this.owners.set(id, { principal, pendingUntil: owner?.principal === principal ? owner.pendingUntil : 0, bound: true });
    return 'bound';
  }

  async unbind(id: string, principal: string): Promise<boolean> {
    const owner = this.ownership(id);
    if (!owner?.bound || owner.principal !== principal) return false;
    if (this.entries.has(id)) owner.bound = false;
    else this.owners.delete(id);
    return true;
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

  /** The id's ownership, unless it has lapsed (then it is forgotten). */
  private ownership(id: string): Ownership | undefined {
    const owner = this.owners.get(id);
    if (owner && this.lapsed(owner)) {
      this.owners.delete(id);
      return undefined;
    }
    return owner;
  }

  private lapsed({ lapsesAt, pendingUntil }: Ownership): boolean {
    return lapsesAt !== undefined && this.now() >= Math.max(lapsesAt, pendingUntil);
  }

  private sweepLapsed(): void {
    for (const [id, owner] of this.owners) if (this.lapsed(owner)) this.owners.delete(id);
    this.sweptAt = this.owners.size;
  }
}
