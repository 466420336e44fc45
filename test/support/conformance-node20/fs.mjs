/**
 * `node:fs` as Node 22 has it, for the conformance bundle on Node 20 (see {@link ./register.mjs}):
 * every export of `node:fs`, plus `globSync`, which Node 20 lacks.
 *
 * The bundle calls it once, as `globSync('**\/checks.json', { cwd })` (tier-check, which reads the
 * results of earlier runs), and reads the answer as paths relative to `cwd`. The `glob` package's
 * `globSync` answers the same for the options `fs.globSync` has (`cwd`, `exclude` as a function of
 * the path): paths relative to `cwd`, without dot files unless a pattern names them. `glob` is a
 * devDependency for this (v13); v7's `sync` is the same function.
 * Delete with the rest of this folder once Node 22 is the floor.
 */
import { createRequire } from 'node:module';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

const glob = createRequire(import.meta.url)('glob');
const globPackageSync = glob.globSync ?? glob.sync;

export * from 'node:fs';
export default fs;

/**
 * @param {string | string[]} pattern
 * @param {{ cwd?: string | URL, exclude?: (path: string) => boolean, withFileTypes?: boolean }} [options]
 * @returns {string[]}
 */
export function globSync(pattern, options = {}) {
  if (options.withFileTypes) throw new Error('globSync (Node 20 shim): withFileTypes is not supported');
  const cwd = options.cwd instanceof URL ? fileURLToPath(options.cwd) : options.cwd;
  const matches = [pattern].flat().flatMap((each) => globPackageSync(each, cwd === undefined ? {} : { cwd }));
  const unique = [...new Set(matches)];
  return typeof options.exclude === 'function' ? unique.filter((path) => !options.exclude(path)) : unique;
}
