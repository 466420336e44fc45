/**
 * What became of a push, as its receipt says:
 * - `queued`: the gateway took it; it waits for the device (behind the turn in flight, or on its way to the instance holding it);
 * - `held`: the device is offline; it is kept for its next connection until `expires_at`;
 * - `sent`: it reached the device (xiaozhi: `tts start`; LLM gateway: its answer frame written);
 * - `spoken`: the device finished it (xiaozhi: the server's `tts stop` after its paced audio ended
 *   normally; LLM gateway: the turn's final `llm_response`, which ends an answer in that protocol);
 * - `interrupted`: it was cut, or never got to the device once taken: an abort, a barge-in, a
 *   newer interrupting push, a disconnection mid-sentence (or while it waited), a failed synthesis or turn;
 * - `expired`: held past its hold, or a reminder that could not be spoken;
 * - `refused`: never taken: offline and not held, busy, not reachable by the caller.
 * The last four are final.
 */
export const PUSH_STATES = ['queued', 'held', 'sent', 'spoken', 'interrupted', 'expired', 'refused'] as const;

export type PushState = (typeof PUSH_STATES)[number];

export type FinalPushState = Extract<PushState, 'spoken' | 'interrupted' | 'expired' | 'refused'>;

const FINAL: ReadonlySet<PushState> = new Set<PushState>(['spoken', 'interrupted', 'expired', 'refused']);

export const isFinal = (state: PushState): state is FinalPushState => FINAL.has(state);

/**
 * The moves a receipt may make; anything else is ignored (a late or repeated report). No state is
 * ever entered twice, so a receipt's history is at most {@link PUSH_STATES}' length.
 */
const MOVES: Readonly<Record<PushState, readonly PushState[]>> = {
  queued: ['held', 'sent', 'interrupted', 'expired', 'refused'],
  held: ['sent', 'interrupted', 'expired', 'refused'],
  sent: ['spoken', 'interrupted'],
  spoken: [],
  interrupted: [],
  expired: [],
  refused: [],
};

export const mayMove = (from: PushState, to: PushState): boolean => MOVES[from].includes(to);

/** The states a receipt may be in to move to `to` (what a store checks atomically). */
export const statesBefore = (to: PushState): PushState[] => PUSH_STATES.filter((from) => mayMove(from, to));

/** One step of a receipt's history. */
export interface PushStep {
  state: PushState;
  /** ISO 8601. */
  at: string;
  /** Why, for `interrupted`, `expired` and `refused` (a gateway code or a short word: `abort`, `barge_in`, `disconnected`...). */
  reason?: string;
}

/** What a push is, as its receipt keeps it. */
export interface PushRecord {
  /** The push id: the `turn_id` its frames carry. */
  id: string;
  device: string;
  /** `say` (a sentence), `turn` (a pushed turn), `reminder` (a reminder that fell due). */
  kind: 'say' | 'turn' | 'reminder';
  /** Who pushed it (`''` with auth off); they see its receipt. */
  by: string;
  /** The device's owner when known; they see its receipt too. */
  owner?: string;
  reminderId?: string;
  state: PushState;
  history: PushStep[];
  /** Epoch ms when a held push runs out. */
  expiresAt?: number;
}

/** A new receipt, `queued` now. */
export function newRecord(push: Omit<PushRecord, 'state' | 'history' | 'expiresAt'>, at = Date.now()): PushRecord {
  return { ...push, state: 'queued', history: [{ state: 'queued', at: new Date(at).toISOString() }] };
}

/** What a receipt moves to: its state, why, and (when held) until when. */
export interface PushMove {
  state: PushState;
  reason?: string;
  expiresAt?: number;
  /** The device's owner, when the move learnt it (a push held for an offline device): they see the receipt too. */
  owner?: string;
}

/** `record` moved as `move` says, or `undefined` when the state machine does not allow it. */
export function advance(record: PushRecord, move: PushMove, at = Date.now()): PushRecord | undefined {
  if (!mayMove(record.state, move.state)) return undefined;
  const step: PushStep = { state: move.state, at: new Date(at).toISOString(), ...(move.reason !== undefined && { reason: move.reason }) };
  return {
    ...record,
    state: move.state,
    history: [...record.history, step],
    ...(move.expiresAt !== undefined && { expiresAt: move.expiresAt }),
    ...(move.owner !== undefined && { owner: move.owner }),
  };
}

/** The id of the receipt of a reminder's push: known when the reminder is set, the same through its retries. */
export const reminderPushId = (reminderId: string): string => `reminder-${reminderId}`;
