import { readdirSync, readFileSync } from 'fs';
import { join, relative, resolve } from 'path';

const CORE = __dirname;
const SRC = resolve(CORE, '..');

/** Every TypeScript file under `dir`. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  );
}

/** What `file` imports by a relative path, resolved against the source tree. */
function relativeImports(file: string): string[] {
  const specifiers = [...readFileSync(file, 'utf8').matchAll(/(?:from|import\()\s*'(\.{1,2}\/[^']+)'/g)].map((match) => match[1]);
  return specifiers.map((specifier) => relative(SRC, resolve(file, '..', specifier)));
}

/**
 * `core` is the protocol-neutral plumbing every protocol stands on: it may use the configuration
 * and itself, and nothing else of the gateway: no protocol folder, no voice-assistant domain, no
 * metrics (which observe it through `CoreObserver`), nothing of `packages/`.
 */
describe('the core', () => {
  it('imports nothing but itself and the configuration', () => {
    const outside = filesUnder(CORE)
      .filter((file) => !file.endsWith('.spec.ts'))
      .flatMap((file) => relativeImports(file).map((target) => `${relative(SRC, file)} -> ${target}`))
      .filter((edge) => {
        const target = edge.split(' -> ')[1];
        return !target.startsWith('core/') && !target.startsWith('config/');
      });
    expect(outside).toEqual([]);
  });
});
