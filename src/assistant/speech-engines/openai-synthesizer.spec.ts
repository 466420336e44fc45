import { freePort } from '../../../test/support/ports';
import { ScriptedSpeechServer, sine } from '../../../test/support/scripted-speech-server';
import { OpenAiSynthesizer } from './openai-synthesizer';
import type { SynthesizedSpeech } from './speech-engine';
import { SpeechEngineError } from './speech-engine.error';

describe('OpenAiSynthesizer', () => {
  let server: ScriptedSpeechServer;
  const tone = sine(440, 0.25, 24000);
  const synthesizer = (settings: Partial<ConstructorParameters<typeof OpenAiSynthesizer>[0]> = {}) =>
    new OpenAiSynthesizer({ baseUrl: server.baseUrl, model: 'tts-test', voice: 'alloy', format: 'pcm', sampleRate: 24000, idleTimeoutMs: 2000, ...settings });

  beforeAll(async () => {
    server = await ScriptedSpeechServer.start();
  });
  afterAll(() => server.close());
  beforeEach(() => server.reset());

  async function samplesOf(speech: SynthesizedSpeech): Promise<Int16Array> {
    const chunks: Int16Array[] = [];
    for await (const chunk of speech.chunks) chunks.push(chunk);
    return Int16Array.from(chunks.flatMap((chunk) => [...chunk]));
  }

  it('asks for the text in the configured model, voice, format and speed, and streams its PCM at TTS_SAMPLE_RATE', async () => {
    server.reply({ samples: tone });
    const speech = await synthesizer({ speed: 1.5, apiKey: 'sk-tts' }).synthesize('Hello there.');
    expect(speech.sampleRate).toBe(24000);
    expect(await samplesOf(speech)).toEqual(tone);
    expect(server.requests[0]).toMatchObject({ model: 'tts-test', voice: 'alloy', input: 'Hello there.', response_format: 'pcm', speed: 1.5 });
    expect(server.requests[0].headers.authorization).toBe('Bearer sk-tts');
  });

  it("takes the caller's voice, and sends no speed when TTS_SPEED is unset", async () => {
    await samplesOf(await synthesizer().synthesize('Hi.', { voice: 'af_heart', language: 'en' }));
    expect(server.requests[0].voice).toBe('af_heart');
    expect(server.requests[0]).not.toHaveProperty('speed');
  });

  it('yields the first samples while the server is still sending the rest', async () => {
    server.reply({ samples: tone, pieceBytes: 2400, intervalMs: 40 });
    const speech = await synthesizer().synthesize('A long answer.');
    const chunks = speech.chunks[Symbol.asyncIterator]();
    const first = await chunks.next();
    expect(first.value).toHaveLength(1200);
    expect(server.streams[0].finished).toBe(false);
    for (let next = await chunks.next(); !next.done; next = await chunks.next());
    expect(server.streams[0].finished).toBe(true);
  });

  it('puts together samples split between two pieces of the body', async () => {
    server.reply({ samples: tone, pieceBytes: 333, intervalMs: 2 });
    expect(await samplesOf(await synthesizer().synthesize('Odd.'))).toEqual(tone);
  });

  it.each([
    ['a WAV whose data size is known', tone.length * 2],
    ['a streamed WAV (data size 0xFFFFFFFF)', 0xffffffff],
    ['a streamed WAV (data size 0)', 0],
  ])('reads the rate from %s and streams its samples', async (_, wavDataSize) => {
    server.reply({ samples: tone, sampleRate: 22050, wavDataSize, pieceBytes: 31, intervalMs: 0 });
    const speech = await synthesizer({ format: 'wav', sampleRate: 24000 }).synthesize('Wave.');
    expect(server.requests[0].response_format).toBe('wav');
    expect(speech.sampleRate).toBe(22050);
    expect(await samplesOf(speech)).toEqual(tone);
  });

  it('stops reading, and ends its chunks quietly, when the caller aborts mid-speech; the server sees the connection close', async () => {
    server.reply({ samples: sine(440, 2, 24000), pieceBytes: 4800, intervalMs: 50 });
    const abort = new AbortController();
    const speech = await synthesizer().synthesize('Long.', { signal: abort.signal });
    let received = 0;
    for await (const chunk of speech.chunks) {
      received += chunk.length;
      if (received >= 4800) abort.abort(new Error('barge-in'));
    }
    expect(received).toBeLessThan(48000);
    await waitFor(() => server.streams[0].closedEarlyAt !== undefined);
    expect(server.streams[0].finished).toBe(false);
  });

  it('ends its chunks when the caller aborts after the server sent everything but before it was all read', async () => {
    server.reply({ samples: sine(440, 1, 24000), pieceBytes: 4800, intervalMs: 0 });
    const abort = new AbortController();
    const speech = await synthesizer().synthesize('Short.', { signal: abort.signal });
    const chunks = speech.chunks[Symbol.asyncIterator]();
    await chunks.next();
    await waitFor(() => server.streams[0].finished);
    abort.abort(new Error('barge-in'));
    const ended = Promise.race([
      (async () => {
        for (let next = await chunks.next(); !next.done; next = await chunks.next());
        return 'ended';
      })(),
      new Promise((resolve) => setTimeout(resolve, 3000, 'still reading')),
    ]);
    expect(await ended).toBe('ended');
  });

  it('ends the request when the caller leaves the loop early', async () => {
    server.reply({ samples: sine(440, 2, 24000), pieceBytes: 4800, intervalMs: 50 });
    for await (const chunk of (await synthesizer().synthesize('Long.')).chunks) if (chunk.length > 0) break;
    await waitFor(() => server.streams[0].closedEarlyAt !== undefined);
  });

  it("rejects with the caller's reason when aborted before the speech starts", async () => {
    server.reply({ samples: tone, delayMs: 1000 });
    const abort = new AbortController();
    const reason = new Error('cancelled');
    setTimeout(() => abort.abort(reason), 50);
    await expect(synthesizer().synthesize('Hi.', { signal: abort.signal })).rejects.toBe(reason);
    await waitFor(() => server.streams[0].closedEarlyAt !== undefined);
  });

  it('gives up when the server stays silent for TTS_TIMEOUT, before its first byte or between two pieces', async () => {
    server.reply({ fault: 'hang' });
    await expect(synthesizer({ idleTimeoutMs: 300 }).synthesize('Hi.')).rejects.toMatchObject({
      engine: 'synthesizer',
      code: 'timeout',
      message: expect.stringMatching(/stayed silent for 0\.3 s: check that it is not overloaded, or raise TTS_TIMEOUT$/),
    });
    server.reply({ fault: 'stall' });
    const speech = await synthesizer({ idleTimeoutMs: 300 }).synthesize('Hi.');
    await expect(samplesOf(speech)).rejects.toMatchObject({ code: 'timeout' });
    await waitFor(() => server.streams.every((stream) => stream.closedEarlyAt !== undefined));
  });

  it('does not count the time its listener takes between chunks as silence', async () => {
    server.reply({ samples: tone, pieceBytes: 2400, intervalMs: 20 });
    const speech = await synthesizer({ idleTimeoutMs: 200 }).synthesize('Slow listener.');
    const chunks: Int16Array[] = [];
    for await (const chunk of speech.chunks) {
      chunks.push(chunk);
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
    expect(chunks.length).toBeGreaterThan(1);
    expect(Int16Array.from(chunks.flatMap((chunk) => [...chunk]))).toEqual(tone);
  });

  it.each([
    ['http500', 'pcm', 'http-error', /answered HTTP 500: check the server's log$/],
    ['http404', 'pcm', 'http-error', /answered HTTP 404: check TTS_BASE_URL \(it should end in \/v1\/\) and TTS_MODEL$/],
    ['json', 'pcm', 'bad-answer', /could not be read \(application\/json, not audio\)/],
    ['garbage', 'wav', 'bad-answer', /could not be read \(a WAV that does not parse: not a RIFF WAVE file\)/],
  ] as const)('words a server that fails (%s, %s) as a SpeechEngineError, never with its body', async (fault, format, code, message) => {
    server.reply({ fault });
    const failure = (await synthesizer({ format })
      .synthesize('Hi.')
      .catch((error: unknown) => error)) as SpeechEngineError;
    expect(failure).toBeInstanceOf(SpeechEngineError);
    expect(failure).toMatchObject({ engine: 'synthesizer', code });
    expect(failure.message).toMatch(message);
    expect(failure.message).not.toMatch(/secret|voice/);
  });

  it('says when nothing listens at TTS_BASE_URL', async () => {
    const port = await freePort();
    await expect(synthesizer({ baseUrl: `http://127.0.0.1:${port}/v1/` }).synthesize('Hi.')).rejects.toMatchObject({
      code: 'unreachable',
      message: `The speech synthesis server at http://127.0.0.1:${port}/v1/ could not be reached: check TTS_BASE_URL`,
    });
  });
});

async function waitFor(condition: () => boolean): Promise<void> {
  for (let waited = 0; !condition() && waited < 2000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
  expect(condition()).toBe(true);
}
