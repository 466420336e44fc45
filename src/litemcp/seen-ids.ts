/** How many recent request ids a connection remembers to ignore repeats. */
export const SEEN_IDS_CAPACITY = 4096;

/**
 * The ids a LiteMCP client has used, so a repeated id is ignored (the spec's rule). Bounded: the
 * oldest ids are forgotten first, so a long-lived connection holds at most {@link SEEN_IDS_CAPACITY}.
 */
export class SeenIds {
  private readonly ids = new Set<number>();

  constructor(private readonly capacity = SEEN_IDS_CAPACITY) {}

  /** Records `id`; returns false when it was already seen. */
  remember(id: number): boolean {
    if (this.ids.has(id)) return false;
    this.ids.add(id);
    if (this.ids.size > this.capacity) this.ids.delete(this.ids.values().next().value as number);
    return true;
  }
}
