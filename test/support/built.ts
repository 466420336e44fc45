import { existsSync } from 'fs';
import { join } from 'path';

const ROOT = join(__dirname, '..', '..');

/** Path of a compiled entry point; `npm test` builds first (pretest), so a missing file is a setup error. */
export function builtFile(relative: string): string {
  const path = join(ROOT, 'dist', relative);
  if (!existsSync(path)) throw new Error(`${path} is missing: run "npm run build" (npm test does it first)`);
  return path;
}

export const PROJECT_ROOT = ROOT;
