import { readdirSync, readFileSync } from 'fs';
import { join, relative, resolve } from 'path';

const SRC = resolve(__dirname, '../..');

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourcesUnder(join(dir, entry.name)) : entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') ? [join(dir, entry.name)] : [],
  );
}

/**
 * An ioredis client made elsewhere would have no 'error' listener of the gateway's: ioredis then
 * writes raw "[ioredis] Unhandled error event" stacks to stderr at every failed reconnection,
 * breaking the JSON log. `connectRedis` gives every client its listener.
 */
describe('ioredis clients', () => {
  it('are made by connectRedis only', () => {
    const makers = sourcesUnder(SRC)
      .filter((file) => /new\s+(Redis|IORedis|Cluster)\s*\(|\.duplicate\s*\(/.test(readFileSync(file, 'utf8')))
      .map((file) => relative(SRC, file));
    expect(makers).toEqual(['core/redis/redis-connection.ts']);
  });
});
