/**
 * The response languages `configure {language}` accepts: those the assistant speaks. In the
 * server this file forwards the assistant's list; the client SDK's build
 * (packages/client-sdk/scripts/copy-protocol.mjs) puts `src/assistant/speech/languages.ts` itself
 * in its place.
 */
export { LANGUAGE_CODES, type LanguageCode } from '../../assistant/speech/languages';
