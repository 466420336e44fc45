export interface HeartbeatOptions {
  /** How often to ping. */
  intervalMs: number;
  /** How long without a sign of life ends the connection. */
  timeoutMs: number;
}

/** What a heartbeat keeps alive: pinged at every beat, told once when it stayed silent too long. */
export interface HeartbeatPeer {
  heartbeatPing(): void;
  heartbeatTimedOut(): void;
}

/** Each interval is beaten in this many slots, so the pings of thousands of peers do not all go out in one tick. */
const SLOTS = 10;

/**
 * One timer for every heartbeat of the same interval: every `intervalMs / SLOTS` it beats the
 * heartbeats of one slot, so each is beaten once per interval and a connection costs its
 * heartbeat a place in a set, not timers and closures of its own (what an idle fleet device
 * mostly is). The timer stops when its last heartbeat does.
 */
class HeartbeatClock {
  private readonly slots = Array.from({ length: SLOTS }, () => new Set<Heartbeat>());
  private size = 0;
  private nextSlot = 0;
  private beating = 0;
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly intervalMs: number,
    private readonly release: () => void,
  ) {}

  add(heartbeat: Heartbeat): Set<Heartbeat> {
    const slot = this.slots[this.nextSlot];
    this.nextSlot = (this.nextSlot + 1) % SLOTS;
    slot.add(heartbeat);
    this.size += 1;
    if (!this.timer) {
      this.timer = setInterval(() => this.beat(), Math.max(1, this.intervalMs / SLOTS));
      this.timer.unref();
    }
    return slot;
  }

  remove(heartbeat: Heartbeat, slot: Set<Heartbeat>): void {
    if (!slot.delete(heartbeat)) return;
    this.size -= 1;
    if (this.size > 0) return;
    clearInterval(this.timer);
    this.timer = undefined;
    this.release();
  }

  private beat(): void {
    const slot = this.slots[this.beating];
    this.beating = (this.beating + 1) % SLOTS;
    const now = Date.now();
    // A Set is iterated live: a heartbeat that stops during the beat is skipped, the rest still beaten.
    for (const heartbeat of slot) heartbeat.beat(now);
  }
}

const clocks = new Map<number, HeartbeatClock>();

function clockOf(intervalMs: number): HeartbeatClock {
  let clock = clocks.get(intervalMs);
  if (!clock) {
    clock = new HeartbeatClock(intervalMs, () => clocks.delete(intervalMs));
    clocks.set(intervalMs, clock);
  }
  return clock;
}

/**
 * Keep-alive for one connection: its peer is pinged once every `intervalMs`, and told it timed out
 * at the first beat after `timeoutMs` without a sign of life ({@link alive}), so a silent peer is
 * dropped between `timeoutMs` and `timeoutMs + intervalMs` after it fell silent. `alive()` only
 * notes the time, since it runs for every frame. The beats come from a clock shared by every
 * heartbeat of the same interval; stopping (on timeout, or when the connection closes) leaves it.
 */
export class Heartbeat {
  private lastSeen = Date.now();
  private readonly clock: HeartbeatClock;
  private readonly slot: Set<Heartbeat>;

  constructor(
    private readonly timeoutMs: number,
    intervalMs: number,
    private readonly peer: HeartbeatPeer,
  ) {
    this.clock = clockOf(intervalMs);
    this.slot = this.clock.add(this);
  }

  static start({ intervalMs, timeoutMs }: HeartbeatOptions, peer: HeartbeatPeer): Heartbeat {
    return new Heartbeat(timeoutMs, intervalMs, peer);
  }

  /** A pong or a frame arrived: the timeout starts over. */
  alive(): void {
    this.lastSeen = Date.now();
  }

  stop(): void {
    this.clock.remove(this, this.slot);
  }

  /** The clock's beat: a ping, or the end once the peer has been silent for `timeoutMs`. */
  beat(now: number): void {
    if (now - this.lastSeen < this.timeoutMs) return this.peer.heartbeatPing();
    this.stop();
    this.peer.heartbeatTimedOut();
  }
}
