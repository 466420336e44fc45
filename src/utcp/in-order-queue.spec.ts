import { Subject, throwError } from 'rxjs';
import { InOrderQueue } from './in-order-queue';

describe('InOrderQueue', () => {
  const settle = () => new Promise((resolve) => setImmediate(resolve));

  it('starts each piece of work once the one before it has finished, in order', async () => {
    const queue = new InOrderQueue();
    const first = new Subject<string>();
    const second = new Subject<string>();
    const seen: string[] = [];
    const started: string[] = [];
    queue.enqueue(() => (started.push('first'), first)).subscribe((value) => seen.push(value));
    queue.enqueue(() => (started.push('second'), second)).subscribe((value) => seen.push(value));
    await settle();
    expect(started).toEqual(['first']);
    first.next('a');
    first.complete();
    await settle();
    expect(started).toEqual(['first', 'second']);
    second.next('b');
    expect(seen).toEqual(['a', 'b']);
  });

  it('moves on when a piece of work fails or its subscriber leaves', async () => {
    const queue = new InOrderQueue();
    const errors: unknown[] = [];
    queue.enqueue(() => throwError(() => new Error('broken'))).subscribe({ error: (error) => errors.push(error) });
    const abandoned = queue.enqueue(() => new Subject<never>()).subscribe();
    let ran = false;
    queue.enqueue(() => ((ran = true), new Subject<never>())).subscribe();
    await settle();
    expect(errors).toHaveLength(1);
    expect(ran).toBe(false);
    abandoned.unsubscribe();
    await settle();
    expect(ran).toBe(true);
  });
});
