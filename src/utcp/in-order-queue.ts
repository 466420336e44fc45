import { finalize, from, Observable, switchMap } from 'rxjs';

/**
 * Runs one connection's work one piece at a time, in the order it was queued. Frames on a
 * UTCP per-tool path carry no id, so the order of the answers is what pairs them with the
 * calls: a call starts once the one before it has answered, or was dropped with its connection.
 */
export class InOrderQueue {
  private tail: Promise<void> = Promise.resolve();

  /** `work` runs once everything queued before it has finished; unsubscribing ends it early. */
  enqueue<T>(work: () => Observable<T>): Observable<T> {
    const previous = this.tail;
    let finished!: () => void;
    this.tail = new Promise((resolve) => (finished = resolve));
    return from(previous).pipe(
      switchMap(() => work()),
      finalize(() => finished()),
    );
  }
}
