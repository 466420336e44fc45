/**
 * Why an upgrade or a request was refused before it reached a protocol, in the few words
 * operators count refusals by (`gateway_refused_connections_total{reason}`): over a connection
 * cap, failed auth, a foreign origin or host, the gateway shutting down, or anything else (an
 * unknown path, a malformed request).
 */
export type RefusalReason = 'cap' | 'auth' | 'origin' | 'shutdown' | 'other';

/** Hears every refusal; the metrics count them. */
export type RefusalListener = (reason: RefusalReason) => void;

/** An upgrade guard's refusal by its HTTP status: over a cap (429, 503) or auth (401, 403). */
export function refusalReasonOfStatus(status: number): RefusalReason {
  if (status === 401 || status === 403) return 'auth';
  if (status === 429 || status === 503) return 'cap';
  return 'other';
}
