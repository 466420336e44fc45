/**
 * The LLM gateway's wire contract, whose one source is the client SDK's `protocol` module
 * (`packages/client-sdk/src/protocol`): frame schemas and types, error and language codes,
 * limits. The server loads the SDK's CommonJS build of it, found beside `src/` and `dist/` alike
 * (the package ships `packages/client-sdk/dist`), so the two ends cannot drift apart.
 */
export * from '../../packages/client-sdk/dist/cjs/protocol';
