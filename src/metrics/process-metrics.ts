import { collectDefaultMetrics, Registry } from 'prom-client';

let shared: Registry | undefined;

/**
 * The process's own metrics (CPU, memory, event-loop lag, GC), in one registry for the whole
 * process. They describe the process, not an app; and prom-client's collectors never stop (its GC
 * observer and event-loop monitor live as long as the process, and hold their registry), so
 * collected per app they kept every app a process had booted and closed in memory, whole.
 */
export function processMetrics(): Registry {
  if (!shared) {
    shared = new Registry();
    collectDefaultMetrics({ register: shared });
  }
  return shared;
}
