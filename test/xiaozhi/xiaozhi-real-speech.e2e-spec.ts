/** @jest-environment ./test/support/native-typed-arrays.environment.js */
import { speak } from '../support/espeak';
import { PocketsphinxServer } from '../support/pocketsphinx-server';
import { startXiaozhiStack, XiaozhiStack } from '../support/xiaozhi/xiaozhi-stack';

/**
 * The whole way with real engines where this machine has them: words spoken by espeak-ng leave
 * the simulated firmware as 16 kHz Opus, cross the gateway's decoder and Silero VAD, and a real
 * recognizer (pocketsphinx, from Debian, behind an OpenAI-compatible transcription endpoint) finds
 * them; the answer, synthesized by espeak-ng and served as a WAV by the scripted speech server,
 * comes back as Opus at 24 kHz that decodes to as long as the speech was.
 */
describe('a xiaozhi device heard by a real recognizer', () => {
  let pocketsphinx: PocketsphinxServer;
  let stack: XiaozhiStack;

  beforeAll(async () => {
    pocketsphinx = await PocketsphinxServer.start();
    stack = await startXiaozhiStack({
      STT_BASE_URL: pocketsphinx.baseUrl,
      STT_MODEL: 'pocketsphinx-en-us',
      STT_LANGUAGE: 'en',
      STT_TIMEOUT: 20,
      TTS_FORMAT: 'wav',
    });
  });

  afterAll(async () => {
    await stack?.close();
    await pocketsphinx?.close();
  });

  it('hears "turn on the kitchen light" and plays the spoken answer whole', async () => {
    const answer = await speak('The kitchen light is on.', { voice: 'en-us' });
    stack.llm.reply({ text: 'The kitchen light is on.' });
    stack.tts.reply({ samples: answer.samples, sampleRate: answer.sampleRate });
    const device = await stack.device({ deviceId: 'aa:bb:cc:00:01:01' });
    device.listen('auto');
    await device.say('turn on the kitchen light', { speech: { voice: 'en-us', rate: 140 }, beforeMs: 600, afterMs: 1500 });
    const heard = await device.next<{ text: string }>('stt', undefined, 20_000);
    expect(heard.text).toMatch(/\bkitchen\b/);
    expect(heard.text).toMatch(/\blight\b/);
    expect(stack.llm.requests[0].messages.at(-1)).toMatchObject({ role: 'user', content: heard.text });
    await device.next('tts', (message: any) => message.state === 'stop', 20_000);
    const spokenMs = (answer.samples.length * 1000) / answer.sampleRate;
    // Whole 60 ms frames: the last one is padded with silence.
    expect(device.playedDurationMs()).toBeGreaterThanOrEqual(spokenMs);
    expect(device.playedDurationMs()).toBeLessThan(spokenMs + 60 + 1);
    expect(device.audioStats()).toMatchObject({ undecodable: 0 });
  });
});
