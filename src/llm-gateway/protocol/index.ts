/**
 * The LLM gateway's wire contract, the one source for both ends: the gateway validates client
 * frames with these schemas and builds its frames to these types; the client SDK, whose build
 * copies this folder, builds and reads them. Dependency-free at run time, so browsers load it as
 * it is; files here import one another only (and core's error codes and the assistant's languages,
 * see error-codes.ts and languages.ts).
 */
export * from './codes.js';
export * from './client-frames.js';
export * from './server-frames.js';
