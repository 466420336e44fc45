import { FSWatcher, watch } from 'fs';
import { basename, dirname } from 'path';

/** How long a burst of changes to the file is waited out before `onChange` runs once. */
export const FILE_WATCH_DEBOUNCE_MS = 150;

/**
 * Calls `onChange` once after each burst of changes to `path`. The file's directory is watched,
 * not the file: editors and config tools (Kubernetes ConfigMaps, `mv` of a new version) replace
 * a file rather than write into it, and a watch on the old file would go quiet after the first
 * replacement. Returns what stops watching.
 */
export function watchFileChanges(path: string, onChange: () => void, onError: (error: Error) => void): () => void {
  const name = basename(path);
  let timer: NodeJS.Timeout | undefined;
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dirname(path), { persistent: false }, (_event, changed) => {
      if (changed !== null && changed !== name && !String(changed).startsWith('..')) return;
      clearTimeout(timer);
      timer = setTimeout(onChange, FILE_WATCH_DEBOUNCE_MS);
      timer.unref();
    });
    watcher.on('error', onError);
  } catch (error) {
    onError(error as Error);
  }
  return () => {
    clearTimeout(timer);
    watcher?.close();
  };
}
