import { readdirSync, readFileSync } from 'fs';
import { join, relative, resolve } from 'path';

const SRC = __dirname;

/** Every TypeScript file under `dir`, specs left out. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(dir, entry.name)) : entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') ? [join(dir, entry.name)] : [],
  );
}

/** What `file` imports by a relative path, resolved against the source tree. */
function relativeImports(file: string): string[] {
  const specifiers = [...readFileSync(file, 'utf8').matchAll(/(?:from|import\()\s*'(\.{1,2}\/[^']+)'/g)].map((match) => match[1]);
  return specifiers.map((specifier) => relative(SRC, resolve(file, '..', specifier)));
}

/**
 * The layers of docs/architecture.md, each importing only itself and the layers below it:
 * - `shared/`: helpers every layer uses (loopback names, time zones, the startup error);
 * - `config/`: the settings;
 * - `core/`: the protocol-neutral plumbing (connections, frames, auth, limits, the catalogue);
 * - `assistant/`: the voice assistant's domain (the model, sessions, speech).
 * Protocol folders and the modules that wire them stand on all of these; nothing here imports
 * them, nor metrics (which watch core and the assistant through observers they define).
 */
const LAYERS: Record<string, string[]> = {
  shared: [],
  config: ['shared'],
  core: ['shared', 'config'],
  assistant: ['shared', 'config', 'core'],
};

describe('the layers', () => {
  it.each(Object.entries(LAYERS))('%s imports nothing but itself and the layers below it', (layer, below) => {
    const allowed = [layer, ...below].map((name) => `${name}/`);
    const outside = filesUnder(join(SRC, layer))
      .flatMap((file) => relativeImports(file).map((target) => `${relative(SRC, file)} -> ${target}`))
      .filter((edge) => !allowed.some((prefix) => edge.split(' -> ')[1].startsWith(prefix)));
    expect(outside).toEqual([]);
  });
});

/** Where memory or Redis may be decided, and a Redis connection opened: the state module (and the settings, and the startup summary that tells it). */
const DECIDES_STATE = ['config/', 'core/state/', 'core/redis/redis-connection.ts', 'core/logging/startup-summary.ts'];

describe('where state lives', () => {
  it('is decided by the state module alone: no other file reads REDIS_URL or opens a Redis connection', () => {
    const deciding = filesUnder(SRC)
      .map((file) => relative(SRC, file))
      .filter((file) => !DECIDES_STATE.some((allowed) => file.startsWith(allowed)))
      .filter((file) => /\bredisUrl\b|\bconnectRedis\(/.test(readFileSync(join(SRC, file), 'utf8')));
    expect(deciding).toEqual([]);
  });
});
