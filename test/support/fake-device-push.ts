import { Subject } from 'rxjs';
import type { DevicePush, FleetCaller, GivenUpPush, PushReceipt, ReleasedDevice, SayRequest } from '../../src/fleet/device-push';

/** One push a {@link FakeDevicePush} was asked for. */
export interface RecordedPush {
  deviceId: string;
  request: SayRequest;
  caller: FleetCaller;
  /** `Date.now()` when it was asked for. */
  at: number;
}

/**
 * A {@link DevicePush} for tests: records every push, knows which connection is which device and
 * who may reach which device, and can be told to fail or to hang (a worker killed mid-push).
 */
export class FakeDevicePush implements DevicePush {
  readonly pushes: RecordedPush[] = [];
  /** connection id → device id. */
  readonly connections = new Map<string, string>();
  /** principal (`''` for none) → devices it may reach; `*` any. */
  readonly grants = new Map<string, Set<string>>();
  /** What `say` does after recording the push: answer, throw, or never answer. */
  behaviour: (push: RecordedPush) => PushReceipt | Error | 'hang' = () => ({ delivered: 'spoken', turnId: 'turn-1' });
  private readonly waiters = new Set<() => void>();

  async say(deviceId: string, request: SayRequest, caller: FleetCaller): Promise<PushReceipt> {
    const push = { deviceId, request: { ...request }, caller: { ...caller }, at: Date.now() };
    this.pushes.push(push);
    for (const wake of this.waiters) wake();
    const outcome = this.behaviour(push);
    if (outcome === 'hang') return new Promise<PushReceipt>(() => undefined);
    if (outcome instanceof Error) throw outcome;
    return outcome;
  }

  deviceOfConnection(connectionId: string): string | undefined {
    return this.connections.get(connectionId);
  }

  async mayReach(caller: FleetCaller, deviceId: string): Promise<boolean> {
    const granted = this.grants.get(caller.principal ?? '');
    return granted !== undefined && (granted.has('*') || granted.has(deviceId));
  }

  /** Device ids to tell as released (`released.next(...)`). */
  readonly released = new Subject<ReleasedDevice>();
  /** The pushes given up (`expire`), with who gave them up. */
  readonly expired: { push: GivenUpPush; caller: FleetCaller }[] = [];

  async expire(push: GivenUpPush, caller: FleetCaller): Promise<void> {
    this.expired.push({ push: { ...push }, caller: { ...caller } });
  }

  /** Until when each device's id was kept for what is pending, as the reminders asked. */
  readonly kept = new Map<string, number>();

  async keepOwned(deviceId: string, untilMs: number): Promise<void> {
    this.kept.set(deviceId, Math.max(this.kept.get(deviceId) ?? 0, untilMs));
  }

  grant(principal: string | undefined, ...devices: string[]): this {
    this.grants.set(principal ?? '', new Set([...(this.grants.get(principal ?? '') ?? []), ...devices]));
    return this;
  }

  /** Resolves once `count` pushes were made in all, or rejects after `timeoutMs`. */
  async waitForPushes(count: number, timeoutMs: number): Promise<RecordedPush[]> {
    if (this.pushes.length >= count) return this.pushes;
    await new Promise<void>((resolve, reject) => {
      const wake = () => {
        if (this.pushes.length < count) return;
        clearTimeout(timer);
        this.waiters.delete(wake);
        resolve();
      };
      const timer = setTimeout(() => {
        this.waiters.delete(wake);
        reject(new Error(`${this.pushes.length} push(es) after ${timeoutMs} ms, ${count} expected`));
      }, timeoutMs);
      this.waiters.add(wake);
    });
    return this.pushes;
  }
}

/** Waits `ms` (real time). */
export const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
