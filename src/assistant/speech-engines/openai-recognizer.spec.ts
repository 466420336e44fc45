import { freePort } from '../../../test/support/ports';
import { ScriptedTranscriptionServer } from '../../../test/support/scripted-transcription-server';
import { OpenAiRecognizer } from './openai-recognizer';
import { SpeechEngineError } from './speech-engine.error';
import { decodeWav } from './wav';

describe('OpenAiRecognizer', () => {
  let server: ScriptedTranscriptionServer;
  const audio = { samples: Int16Array.from({ length: 1600 }, (_, i) => (i * 37) % 2000), sampleRate: 16000 };
  const recognizer = (settings: Partial<ConstructorParameters<typeof OpenAiRecognizer>[0]> = {}) =>
    new OpenAiRecognizer({ baseUrl: server.baseUrl, model: 'whisper-test', timeoutMs: 2000, ...settings });

  beforeAll(async () => {
    server = await ScriptedTranscriptionServer.start();
  });
  afterAll(() => server.close());
  beforeEach(() => server.reset());

  it('uploads the utterance as a 16-bit mono WAV with the model and language, and returns the text', async () => {
    server.reply({ text: ' Turn on the light. ', language: 'english' });
    const transcript = await recognizer({ language: 'en', apiKey: 'sk-stt' }).transcribe(audio);
    expect(transcript).toEqual({ text: 'Turn on the light.', language: 'english' });
    const [upload] = server.requests;
    expect(upload).toMatchObject({ model: 'whisper-test', language: 'en', responseFormat: 'json', file: { name: 'speech.wav', type: 'audio/wav' } });
    expect(decodeWav(upload.file.bytes)).toEqual(audio);
    expect(upload.headers.authorization).toBe('Bearer sk-stt');
  });

  it("sends the caller's language over STT_LANGUAGE, and none when neither is set", async () => {
    await recognizer({ language: 'en' }).transcribe(audio, { language: 'fr' });
    await recognizer().transcribe(audio);
    expect(server.requests.map((upload) => upload.language)).toEqual(['fr', undefined]);
  });

  it('returns an empty text as it is: nothing was heard, which is not a failure', async () => {
    server.reply({ text: '' });
    await expect(recognizer().transcribe(audio)).resolves.toEqual({ text: '' });
  });

  it.each([
    ['http500', 'http-error', /answered HTTP 500: check the server's log$/],
    ['http401', 'http-error', /answered HTTP 401: check STT_API_KEY$/],
    ['garbage', 'bad-answer', /could not be read \(not JSON\): check that STT_BASE_URL is an OpenAI-compatible server$/],
    ['empty', 'bad-answer', /could not be read \(empty\)/],
    ['noText', 'bad-answer', /could not be read \(no text in it\)/],
  ] as const)('words a server that fails (%s) as a SpeechEngineError, never with its body', async (fault, code, message) => {
    server.reply({ fault });
    const failure = (await recognizer()
      .transcribe(audio)
      .catch((error: unknown) => error)) as SpeechEngineError;
    expect(failure).toBeInstanceOf(SpeechEngineError);
    expect(failure).toMatchObject({ engine: 'recognizer', code });
    expect(failure.message).toMatch(message);
    expect(failure.message).toMatch(/^The speech recognition server at http:\/\/127\.0\.0\.1:\d+\/v1\//);
    expect(failure.message).not.toMatch(/secret|Bad Gateway/);
  });

  it('gives up after STT_TIMEOUT and hangs up', async () => {
    server.reply({ fault: 'hang' });
    const started = Date.now();
    await expect(recognizer({ timeoutMs: 300 }).transcribe(audio)).rejects.toMatchObject({
      code: 'timeout',
      message: expect.stringMatching(/did not answer within 0\.3 s: check that it is not overloaded, or raise STT_TIMEOUT$/),
    });
    expect(Date.now() - started).toBeLessThan(1500);
    await waitFor(() => server.closedEarly === 1);
  });

  it('says when nothing listens at STT_BASE_URL', async () => {
    const port = await freePort();
    await expect(recognizer({ baseUrl: `http://user:pw@127.0.0.1:${port}/v1/` }).transcribe(audio)).rejects.toMatchObject({
      code: 'unreachable',
      message: `The speech recognition server at http://***:***@127.0.0.1:${port}/v1/ could not be reached: check STT_BASE_URL`,
    });
  });

  it("stops the request when the caller's signal aborts, with the caller's reason", async () => {
    server.reply({ text: 'late', delayMs: 1000 });
    const abort = new AbortController();
    const reason = new Error('the user spoke again');
    setTimeout(() => abort.abort(reason), 50);
    await expect(recognizer().transcribe(audio, { signal: abort.signal })).rejects.toBe(reason);
    await waitFor(() => server.closedEarly === 1);
  });
});

async function waitFor(condition: () => boolean): Promise<void> {
  for (let waited = 0; !condition() && waited < 2000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
  expect(condition()).toBe(true);
}
