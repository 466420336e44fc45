/** DI token of the {@link AssistantObserver}, when the app has one (the metrics module provides it). */
export const ASSISTANT_OBSERVER = Symbol('ASSISTANT_OBSERVER');

/** How one request to the model ended. */
export type ModelRequestOutcome = 'ok' | 'error' | 'timeout' | 'cancelled';

/**
 * What the voice assistant tells whoever watches it (the Prometheus metrics): each model
 * request's end. The assistant defines it and never imports who implements it, as core does with
 * its `CoreObserver`.
 */
export interface AssistantObserver {
  modelRequestEnded(outcome: ModelRequestOutcome, durationMs: number, firstTokenMs?: number): void;
}
