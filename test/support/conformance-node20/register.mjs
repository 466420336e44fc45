/**
 * Lets `@modelcontextprotocol/conformance` 0.2.x (installed as `conformance-2026`) run on Node 20:
 *
 *     node --import ./test/support/conformance-node20/register.mjs node_modules/conformance-2026/dist/index.js ...
 *
 * Its ESM bundle is built for Node 22 and imports `globSync` from `fs`, which Node 20 does not
 * have, so the bundle fails to link before it runs. This registers {@link ./hooks.mjs}, whose
 * resolve hook hands modules of that package a shim of `fs` ({@link ./fs.mjs}) instead: `node:fs`
 * plus a `globSync` built on the `glob` package. Nothing else the bundle uses is missing on Node 20.
 * The CLI spawns its own children with `process.execArgv`, so they get the shim too.
 *
 * Delete this folder (and the `--import` in test/mcp/mcp-conformance-2026.e2e-spec.ts) when Node
 * 22 is the floor (package.json `engines`, CI): the bundle then runs as it is.
 */
import { register } from 'node:module';

register('./hooks.mjs', import.meta.url);
