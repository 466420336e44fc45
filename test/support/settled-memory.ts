import { setFlagsFromString } from 'v8';
import { runInNewContext } from 'vm';

let gc: (() => void) | undefined;

/** Heap and external memory in use after a full garbage collection: what a test compares before and after a flood. */
export function settledMemory(): number {
  if (!gc) {
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as () => void;
  }
  gc();
  const { heapUsed, external } = process.memoryUsage();
  return heapUsed + external;
}
