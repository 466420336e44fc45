/**
 * Module resolution hooks for {@link ./register.mjs}: an import of `fs` or `node:fs` by a module
 * of the conformance package (any path under a `conformance-2026` or `@modelcontextprotocol/conformance`
 * folder) resolves to {@link ./fs.mjs}. Every other import, including the shim's own `node:fs`,
 * resolves as usual. Delete with the rest of this folder once Node 22 is the floor.
 */
const SHIM = new URL('./fs.mjs', import.meta.url).href;
const CONFORMANCE_PACKAGE = /\/node_modules\/(?:conformance-2026|@modelcontextprotocol\/conformance)\//;

export async function resolve(specifier, context, nextResolve) {
  if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL && CONFORMANCE_PACKAGE.test(context.parentURL)) {
    return { url: SHIM, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}
