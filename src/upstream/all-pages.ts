/** Most pages read of one list of an upstream's: a bound on a server that pages forever. */
const MAX_PAGES = 100;

/** Every item of an upstream's paginated list (`tools/list`, `resources/list`...), page by page, at most {@link MAX_PAGES} pages. */
export async function allPages<P extends { nextCursor?: string }, T>(
  list: (params: { cursor: string } | undefined) => Promise<P>,
  items: (page: P) => T[],
): Promise<T[]> {
  const all: T[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const result = await list(cursor === undefined ? undefined : { cursor });
    all.push(...items(result));
    cursor = result.nextCursor;
    if (cursor === undefined) break;
  }
  return all;
}
