import { Logger, OnApplicationShutdown } from '@nestjs/common';
import type { DeliverReminder, Reminder, ReminderScheduler, RemindersOptions } from './reminder';
import { ReminderLimitError } from './reminder';

/** The longest delay `setTimeout` takes (about 24.8 days); a later reminder re-arms its timer on the way. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** The key of a principal's reminders; the anonymous principal (auth off) is one principal too. */
const ownerKey = (principal: string | undefined): string => (principal === undefined ? '' : `p:${principal}`);

/**
 * Reminders in memory, for a gateway without `REDIS_URL`: one `unref`'d timer each, so they
 * never keep the process alive, and they are lost on a restart. Bounded by the per-device and
 * per-principal caps (principals are the configured tokens, and the anonymous one).
 */
export class MemoryReminderScheduler implements ReminderScheduler, OnApplicationShutdown {
  private readonly logger = new Logger('Reminders');
  private readonly reminders = new Map<string, { reminder: Reminder; timer: NodeJS.Timeout }>();
  private readonly byDevice = new Map<string, Set<string>>();
  private readonly byOwner = new Map<string, Set<string>>();
  /** Aborted on shutdown, so a delivery waiting to try again stops. */
  private readonly stopping = new AbortController();
  private readonly deliveries = new Set<Promise<void>>();

  constructor(
    private readonly options: Pick<RemindersOptions, 'maxPerDevice' | 'maxPerPrincipal'>,
    private readonly deliver: DeliverReminder,
    private readonly now: () => number = Date.now,
  ) {}

  async schedule(reminder: Reminder): Promise<void> {
    if (this.stopping.signal.aborted) throw new Error('Reminders are shutting down');
    if (this.reminders.has(reminder.id)) throw new Error(`Reminder ${reminder.id} exists already`);
    const device = this.byDevice.get(reminder.deviceId);
    if ((device?.size ?? 0) >= this.options.maxPerDevice) throw new ReminderLimitError('device', this.options.maxPerDevice);
    const owner = this.byOwner.get(ownerKey(reminder.principal));
    if ((owner?.size ?? 0) >= this.options.maxPerPrincipal) throw new ReminderLimitError('principal', this.options.maxPerPrincipal);
    const entry = { reminder: { ...reminder }, timer: this.arm(reminder) };
    this.reminders.set(reminder.id, entry);
    addTo(this.byDevice, reminder.deviceId, reminder.id);
    addTo(this.byOwner, ownerKey(reminder.principal), reminder.id);
  }

  async get(id: string): Promise<Reminder | undefined> {
    const entry = this.reminders.get(id);
    return entry && { ...entry.reminder };
  }

  async listForDevice(deviceId: string): Promise<Reminder[]> {
    return [...(this.byDevice.get(deviceId) ?? [])]
      .map((id) => ({ ...this.reminders.get(id)!.reminder }))
      .sort((a, b) => a.dueAt - b.dueAt || (a.id < b.id ? -1 : 1));
  }

  async cancel(id: string): Promise<Reminder | undefined> {
    const entry = this.reminders.get(id);
    if (!entry) return undefined;
    clearTimeout(entry.timer);
    this.forget(entry.reminder);
    return { ...entry.reminder };
  }

  /** Pending reminders, all devices together. */
  get size(): number {
    return this.reminders.size;
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopping.abort();
    for (const { timer } of this.reminders.values()) clearTimeout(timer);
    if (this.reminders.size > 0) this.logger.warn(`${this.reminders.size} pending reminder(s) lost: without REDIS_URL reminders live in memory`);
    this.reminders.clear();
    this.byDevice.clear();
    this.byOwner.clear();
    await Promise.allSettled([...this.deliveries]);
  }

  /** A timer for `reminder`, re-armed on the way when it is further ahead than a timer can wait. */
  private arm(reminder: Reminder): NodeJS.Timeout {
    const delay = reminder.dueAt - this.now();
    const timer = setTimeout(
      () => {
        const entry = this.reminders.get(reminder.id);
        if (!entry) return;
        if (reminder.dueAt - this.now() > 0) {
          entry.timer = this.arm(reminder);
          return;
        }
        this.forget(reminder);
        const delivery = this.deliver(entry.reminder, this.stopping.signal).finally(() => this.deliveries.delete(delivery));
        this.deliveries.add(delivery);
      },
      Math.min(Math.max(0, delay), MAX_TIMER_MS),
    );
    timer.unref();
    return timer;
  }

  private forget(reminder: Reminder): void {
    this.reminders.delete(reminder.id);
    removeFrom(this.byDevice, reminder.deviceId, reminder.id);
    removeFrom(this.byOwner, ownerKey(reminder.principal), reminder.id);
  }
}

function addTo(index: Map<string, Set<string>>, key: string, id: string): void {
  const ids = index.get(key);
  if (ids) ids.add(id);
  else index.set(key, new Set([id]));
}

function removeFrom(index: Map<string, Set<string>>, key: string, id: string): void {
  const ids = index.get(key);
  if (!ids) return;
  ids.delete(id);
  if (ids.size === 0) index.delete(key);
}
