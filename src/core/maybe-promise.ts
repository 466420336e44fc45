/**
 * A value, or a promise of one. The hot paths (a tool call, a frame's answer) return what they
 * have at once when nothing had to wait, so a synchronous tool costs no promise at all.
 */
export type MaybePromise<T> = T | Promise<T>;

export function isPromise<T>(value: MaybePromise<T>): value is Promise<T> {
  return typeof (value as Promise<T> | null)?.then === 'function';
}

/** `fn` applied to `value`, at once when it is there, once it settles when it is a promise. */
export function thenMaybe<T, R>(value: MaybePromise<T>, fn: (settled: T) => R): MaybePromise<R> {
  return isPromise(value) ? value.then(fn) : fn(value);
}
