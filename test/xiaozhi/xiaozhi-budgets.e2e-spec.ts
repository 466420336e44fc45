/** @jest-environment ./test/support/native-typed-arrays.environment.js */
import { sine } from '../support/scripted-speech-server';
import { DEVICE_TOKEN, startXiaozhiStack, XiaozhiStack } from '../support/xiaozhi/xiaozhi-stack';

const OUTPUT_RATE = 24_000;
const halfSecond = () => ({ samples: sine(440, 0.5, OUTPUT_RATE) });
/** The devices' token: the principal that owns them, and so sets their budgets. */
const owner = { Authorization: `Bearer ${DEVICE_TOKEN}`, 'Content-Type': 'application/json' };

/**
 * A simulated xiaozhi firmware over budget: once the owner's limit for the device is spent, what
 * it says gets an `alert` naming the budget, and the model, the synthesizer or the recognizer is
 * not asked again.
 */
describe('xiaozhi devices over budget', () => {
  let stack: XiaozhiStack;

  beforeAll(async () => {
    stack = await startXiaozhiStack({ VAD_SILENCE_MS: 500 });
  });

  afterEach(() => {
    stack.llm.reset();
    stack.stt.reset();
    stack.tts.reset();
  });

  afterAll(() => stack?.close());

  async function setBudget(deviceId: string, budget: Record<string, number>): Promise<void> {
    const response = await fetch(stack.gateway.http(`/devices/${deviceId}/budget`), { method: 'PUT', headers: owner, body: JSON.stringify(budget) });
    expect(response.status).toBe(200);
  }

  it('alerts the device, and asks no model, once its LLM tokens are spent', async () => {
    const device = await stack.device({ deviceId: 'aa:bb:cc:00:0b:01' });
    await setBudget('aa:bb:cc:00:0b:01', { llm_tokens_per_day: 20 });
    stack.stt.reply({ text: 'hello' }, { text: 'hello again' });
    stack.llm.reply({ text: 'Hi there.', usage: { prompt_tokens: 20, completion_tokens: 5 } });
    stack.tts.reply(halfSecond());
    device.listen('auto');
    await device.say('hello');
    await device.next('tts', (message: any) => message.state === 'stop', 10_000);
    await device.waitForState('listening', 5000);
    await device.say('hello again');
    expect(await device.next<any>('alert', undefined, 10_000)).toMatchObject({
      status: 'error',
      message: expect.stringMatching(/^This device's daily budget of 20 LLM tokens is spent; it resets at /),
    });
    expect(stack.llm.requests).toHaveLength(1);
    expect(stack.tts.requests).toHaveLength(1);
  });

  it('refuses a turn it could not speak once its synthesized characters are spent, before the model is asked', async () => {
    const device = await stack.device({ deviceId: 'aa:bb:cc:00:0b:02' });
    await setBudget('aa:bb:cc:00:0b:02', { tts_chars_per_day: 5 });
    stack.stt.reply({ text: 'hello' }, { text: 'hello again' });
    stack.llm.reply({ text: 'Hi there.' });
    stack.tts.reply(halfSecond());
    device.listen('auto');
    await device.say('hello');
    await device.next('tts', (message: any) => message.state === 'stop', 10_000);
    await device.waitForState('listening', 5000);
    await device.say('hello again');
    expect(await device.next<any>('alert', undefined, 10_000)).toMatchObject({ message: expect.stringMatching(/budget of 5 synthesized characters is spent/) });
    expect(stack.llm.requests).toHaveLength(1);
    const usage = (await (await fetch(stack.gateway.http('/devices/aa:bb:cc:00:0b:02/usage'), { headers: owner })).json()) as any;
    expect(usage.usage.tts_chars.day).toMatchObject({ used: 'Hi there.'.length, limit: 5, remaining: 0 });
    expect(usage.usage.stt_seconds.day.used).toBeGreaterThan(0.5);
  });

  it('alerts the device, and sends the recognizer nothing, once its audio seconds are spent', async () => {
    const device = await stack.device({ deviceId: 'aa:bb:cc:00:0b:03' });
    await setBudget('aa:bb:cc:00:0b:03', { stt_seconds_per_day: 1 });
    stack.stt.reply({ text: '' });
    device.listen('auto');
    await device.say('hello there');
    await waitFor(() => stack.stt.requests.length === 1);
    await device.waitForState('listening', 5000);
    await device.say('hello again');
    expect(await device.next<any>('alert', undefined, 10_000)).toMatchObject({
      message: expect.stringMatching(/budget of 1 seconds of recognized audio is spent/),
    });
    expect(stack.stt.requests).toHaveLength(1);
    expect(stack.llm.requests).toHaveLength(0);
  });
});

async function waitFor(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('Timed out waiting for a condition');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
