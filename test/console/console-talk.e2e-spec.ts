/** @jest-environment ./test/support/native-typed-arrays.environment.js */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import type { BrowserContext, Page } from 'playwright-core';
import { Resampler } from '../../src/assistant/audio/resampler';
import { encodeWav } from '../../src/assistant/speech-engines/wav';
import { ARTIFACTS_DIR, launchChromium, TestBrowser } from '../support/browser';
import { speak } from '../support/espeak';
import { LlmStack, startLlmStack } from '../support/llm-stack';
import { PocketsphinxServer } from '../support/pocketsphinx-server';
import { ScriptedSpeechServer, sine } from '../support/scripted-speech-server';

const TOKEN = 'talk-token';
const COMMAND = 'turn on the kitchen light';
/** The rate Chromium's fake microphone reads its file at without resampling it. */
const MICROPHONE_FILE_RATE = 48_000;

/**
 * What the fake microphone plays, over and over from the moment the page opens it: espeak-ng
 * saying `text` after a second of silence, then silence long enough for the gateway to hear the
 * end of it and answer before the file comes round again.
 */
async function microphoneFile(text: string, directory: string): Promise<string> {
  const spoken = await speak(text, { voice: 'en-us', rate: 140 });
  const resampler = await Resampler.open(spoken.sampleRate, MICROPHONE_FILE_RATE);
  const speech = new Int16Array([...resampler.push(spoken.samples), ...resampler.flush()]);
  resampler.free();
  const samples = new Int16Array(MICROPHONE_FILE_RATE * 6 + speech.length);
  samples.set(speech, MICROPHONE_FILE_RATE);
  const path = join(directory, 'microphone.wav');
  writeFileSync(path, encodeWav({ samples, sampleRate: MICROPHONE_FILE_RATE }));
  return path;
}

/** The fake capture device playing `wav`, and the permission prompt answered yes. */
const microphoneFlags = (wav: string) => ['--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream', `--use-file-for-fake-audio-capture=${wav}`];

/**
 * The Talk view in headless Chromium, speaking to the real gateway through a microphone that
 * says a command: the gateway's own Opus decoder, voice activity detection and a real
 * recognizer (pocketsphinx) must hear the words the browser encoded, and the page must decode
 * and play the spoken answer.
 */
describe('the console Talk view, a xiaozhi device in the browser', () => {
  let recognizer: PocketsphinxServer | undefined;
  let speech: ScriptedSpeechServer | undefined;
  let stack: LlmStack | undefined;
  let browser: TestBrowser | undefined;
  let context: BrowserContext | undefined;
  let directory: string;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), 'console-talk-'));
    const wav = await microphoneFile(COMMAND, directory);
    recognizer = await PocketsphinxServer.start();
    speech = await ScriptedSpeechServer.start();
    stack = await startLlmStack({
      AUTH_TOKENS: TOKEN,
      STT_BASE_URL: recognizer.baseUrl,
      STT_MODEL: 'pocketsphinx-en-us',
      STT_LANGUAGE: 'en',
      STT_TIMEOUT: 20,
      TTS_BASE_URL: speech.baseUrl,
    });
    browser = await launchChromium({ extraArgs: microphoneFlags(wav) });
    context = browser.context;
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await stack?.close();
    await speech?.close();
    await recognizer?.close();
    rmSync(directory, { recursive: true, force: true });
  });

  afterEach(async () => {
    await Promise.all((context?.pages() ?? []).map((page) => page.close()));
    expect(pageErrors.splice(0)).toEqual([]);
  });

  /** The console, its Talk view connected as a device with the test's token. */
  async function openTalk(): Promise<Page> {
    const page = await context!.newPage();
    page.on('pageerror', (error) => pageErrors.push(error.message));
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(stack!.gateway.http('/'));
    await page.waitForSelector('body[data-ready="true"]');
    await page.fill('#token', TOKEN);
    await page.click('[data-tab="talk"]');
    await page.click('#talk-connect');
    await page.waitForSelector('#talk-state[data-state="ready"]');
    return page;
  }

  /** Frames of the Talk view's connection in the frame log, as `direction:type`. */
  const loggedFrames = (page: Page) =>
    page.locator('#frames li[data-via="xiaozhi"]').evaluateAll((items: any[]) => items.map((item) => `${item.dataset.direction}:${item.dataset.type}`));

  it('says hello as the firmware does, is heard saying "turn on the kitchen light", and plays the answer', async () => {
    stack!.llm.reply({ text: '😊 The kitchen light is on. Anything else?' });
    speech!.reply({ samples: sine(440, 0.6, 24_000) }, { samples: sine(660, 0.6, 24_000) });
    const page = await openTalk();
    const deviceId = await page.inputValue('#talk-device-id');
    expect(deviceId).toMatch(/^console-[0-9a-f]{8}$/);
    await page.locator('.entry-note', { hasText: `Connected as device ${deviceId}` }).waitFor();

    await page.click('#talk-start');
    const heard = page.locator('#talk-transcript .entry-user');
    await heard.waitFor({ timeout: 20_000 });
    expect(await heard.textContent()).toMatch(/\bkitchen light\b/);
    expect(stack!.llm.requests.at(-1)!.messages.at(-1)!.content).toMatch(/\bkitchen light\b/);

    await page.locator('#talk-transcript .entry-assistant:not(.streaming)', { hasText: 'Anything else?' }).waitFor({ timeout: 15_000 });
    expect(await page.textContent('#talk-transcript .entry-assistant p')).toBe('The kitchen light is on. Anything else?');
    expect(await page.textContent('#talk-face')).toBe('😊 happy');
    expect(await page.textContent('#talk-transcript .entry-assistant .emotion')).toBe('😊 happy');
    // The microphone went off when the answer began, as the firmware's does in auto mode.
    expect(await page.getAttribute('#talk-state', 'data-state')).toBe('ready');

    // 1.2 s of answer at 24 kHz, 60 ms a packet: about 20 packets, each decoded and scheduled.
    const received = Number(await page.getAttribute('#talk-received', 'data-packets'));
    expect(received).toBeGreaterThanOrEqual(18);
    // Decoding runs behind the packets' arrival.
    await page.waitForFunction(() => Number((globalThis as any).document.querySelector('#talk-received').dataset.playedMs) >= 1000);
    const sent = Number(await page.getAttribute('#talk-sent', 'data-packets'));
    expect(sent).toBeGreaterThan(20);

    const frames = await loggedFrames(page);
    expect(frames.slice(0, 3)).toEqual(['out:hello', 'in:hello', 'out:listen']);
    expect(frames).toEqual(expect.arrayContaining(['out:binary', 'in:stt', 'in:llm', 'in:tts', 'in:binary']));
    const logged = (direction: string) =>
      page
        .locator(`#frames li[data-via="xiaozhi"][data-type="binary"][data-direction="${direction}"]`)
        .evaluateAll((items: any[]) => items.reduce((sum, item) => sum + Number(item.dataset.frames), 0));
    expect(await logged('in')).toBe(received);
    expect(await logged('out')).toBe(sent);
    mkdirSync(ARTIFACTS_DIR, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS_DIR, 'console-talk.png') });
  }, 60_000);

  it('listens again after each answer when asked to, as the firmware does in auto mode', async () => {
    stack!.llm.reply({ text: 'Done.' }, { text: 'Done again.' });
    const page = await openTalk();
    await page.check('#talk-again');
    await page.click('#talk-start');
    // The microphone's file comes round again: the command is heard a second time, on the same
    // listening. (On a loaded machine the gateway may be behind the microphone by seconds, and
    // hear it a third time before the second answer is over: only the first two are checked.)
    await page.locator('#talk-transcript .entry-assistant:not(.streaming)', { hasText: 'Done again.' }).waitFor({ timeout: 30_000 });
    const { heard, listens, answered } = await page.evaluate(() => {
      const all = (selector: string) => Array.from((globalThis as any).document.querySelectorAll(selector) as ArrayLike<{ textContent: string }>);
      return {
        heard: all('#talk-transcript .entry-user').map((entry) => entry.textContent),
        listens: all('#frames li[data-via="xiaozhi"][data-type="listen"] pre').map((frame) => JSON.parse(frame.textContent).state),
        answered: all('#talk-transcript .entry-assistant:not(.streaming)').length,
      };
    });
    expect(heard.slice(0, 2)).toEqual([expect.stringMatching(/kitchen light/), expect.stringMatching(/kitchen light/)]);
    // Once when Talk was pressed, then once after each answer; never a stop.
    expect(listens).toEqual(Array(answered + 1).fill('start'));
    expect(await page.isEnabled('#talk-stop')).toBe(true);
    // Each answer's face, which the gateway sends after the answer when it has no emoji.
    const answers = page.locator('#talk-transcript .entry-assistant');
    await answers.nth(1).locator('.emotion').waitFor();
    expect((await answers.locator('.emotion').allTextContents()).slice(0, 2)).toEqual(['😶 neutral', '😶 neutral']);

    await page.click('#talk-stop');
    await page.waitForSelector('#talk-state[data-state="ready"]');
    expect(JSON.parse((await page.locator('#frames li[data-via="xiaozhi"][data-type="listen"] pre').last().textContent())!)).toMatchObject({ state: 'stop' });
  }, 60_000);

  /**
   * Makes the gateway say 5 s of speech (83 packets) to the page, as the Devices view would, and
   * presses Abort once 5 packets have come; resolves once the gateway's `tts stop` came, with
   * what the page had received and played at the click.
   */
  async function abortLongAnswer(page: Page): Promise<{ receivedAtAbort: number; playedAtAbort: number }> {
    const deviceId = await page.inputValue('#talk-device-id');
    speech!.reply({ samples: sine(440, 5, 24_000) });
    const say = await fetch(stack!.gateway.http(`/devices/${deviceId}/say`), {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'A long story.' }),
    });
    expect(say.status).toBe(200);
    await page.locator('#talk-transcript .entry-assistant', { hasText: 'A long story.' }).waitFor();
    await page.waitForFunction(() => Number((globalThis as any).document.querySelector('#talk-received').dataset.packets) >= 5);
    await page.click('#talk-abort');
    const receivedAtAbort = Number(await page.getAttribute('#talk-received', 'data-packets'));
    const playedAtAbort = Number(await page.getAttribute('#talk-received', 'data-played-ms'));
    await page.waitForSelector('#talk-state[data-state="ready"]', { timeout: 10_000 });
    return { receivedAtAbort, playedAtAbort };
  }

  it('joins the fleet under its id, and Abort silences what the gateway says on the page at once', async () => {
    const page = await openTalk();
    const deviceId = await page.inputValue('#talk-device-id');
    const fleet = (await (await fetch(stack!.gateway.http('/devices'), { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as {
      devices: { id: string }[];
    };
    expect(fleet.devices.map((device) => device.id)).toContain(deviceId);

    const { playedAtAbort } = await abortLongAnswer(page);
    const fromAbort = await page
      .locator('#frames li[data-via="xiaozhi"]')
      .evaluateAll((items: any[]) =>
        items.slice(items.findIndex((item) => item.dataset.type === 'abort')).map((item) => `${item.dataset.direction}:${item.dataset.type}`),
      );
    expect(fromAbort[0]).toBe('out:abort');
    expect(fromAbort.at(-1)).toBe('in:tts');
    // What was still on its way is not played.
    expect(Number(await page.getAttribute('#talk-received', 'data-played-ms'))).toBe(playedAtAbort);
  }, 30_000);

  it('Abort makes the gateway stop sending the answer within a few packets', async () => {
    const page = await openTalk();
    const { receivedAtAbort } = await abortLongAnswer(page);
    expect(Number(await page.getAttribute('#talk-received', 'data-packets')) - receivedAtAbort).toBeLessThan(10);
  }, 30_000);

  it('says why the gateway refused it: a wrong token, or none', async () => {
    const page = await context!.newPage();
    page.on('pageerror', (error) => pageErrors.push(error.message));
    await page.goto(stack!.gateway.http('/'));
    await page.waitForSelector('body[data-ready="true"]');
    await page.click('[data-tab="talk"]');

    await page.fill('#token', 'not-a-token');
    await page.click('#talk-connect');
    await page.waitForSelector('#talk-problem[data-reason="forbidden"]');
    expect(await page.textContent('#talk-problem')).toMatch(/^Could not connect to \/xiaozhi\/v1\/: FORBIDDEN \(HTTP 403\): The gateway refused this token/);
    expect(await page.getAttribute('#talk-state', 'data-state')).toBe('idle');

    await page.fill('#token', '');
    await page.click('#talk-connect');
    await page.waitForSelector('#talk-problem[data-reason="unauthorized"]');
    expect(await page.textContent('#talk-problem')).toContain('UNAUTHORIZED (HTTP 401)');
  });
});
