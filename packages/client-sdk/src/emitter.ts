/** A listener of event `K` of the event map `E`. */
export type Listener<E, K extends keyof E> = (payload: E[K]) => void;

/**
 * A typed event emitter that runs in browsers and Node alike (Node's `EventEmitter` does not
 * exist in browsers, `EventTarget` has no payload types). A listener that throws does not stop
 * the others or the client: its error is rethrown on its own, outside the client's code.
 */
export class TypedEmitter<E> {
  private readonly listeners = new Map<keyof E, Set<(payload: never) => void>>();

  /** Calls `listener` on every `type` event; returns a function that removes it. */
  on<K extends keyof E>(type: K, listener: Listener<E, K>): () => void {
    let set = this.listeners.get(type);
    if (!set) this.listeners.set(type, (set = new Set()));
    set.add(listener as (payload: never) => void);
    return () => this.off(type, listener);
  }

  /** Calls `listener` on the next `type` event only. */
  once<K extends keyof E>(type: K, listener: Listener<E, K>): () => void {
    const remove = this.on(type, (payload) => {
      remove();
      listener(payload);
    });
    return remove;
  }

  off<K extends keyof E>(type: K, listener: Listener<E, K>): void {
    this.listeners.get(type)?.delete(listener as (payload: never) => void);
  }

  protected emit<K extends keyof E>(type: K, payload: E[K]): void {
    for (const listener of [...(this.listeners.get(type) ?? [])]) {
      try {
        (listener as Listener<E, K>)(payload);
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }

  protected removeAllListeners(): void {
    this.listeners.clear();
  }
}
