import OpenAI from 'openai';

/**
 * An `openai` client for a speech server. It uses the package's own `fetch` (Node's), not the
 * model's `httpFetch`: that one sends string bodies and hands back Node streams, while these
 * requests upload a multipart file and read a binary body as a web stream; and one request per
 * utterance or sentence does not pay the per-event cost that made `httpFetch` worth it for the
 * model's token stream. No retries: a device waits in silence meanwhile, and the user repeats
 * sooner than a retry would help. The deadline is the engine's own (see `EngineRequest`).
 */
export function speechClient({ baseUrl, apiKey }: { baseUrl: string; apiKey?: string }): OpenAI {
  // Local servers need no key, but the package insists on one.
  return new OpenAI({ baseURL: baseUrl, apiKey: apiKey ?? 'not-needed', maxRetries: 0, timeout: 24 * 3600 * 1000 });
}
