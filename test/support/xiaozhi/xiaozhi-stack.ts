import type { EnvironmentInput } from '../../../src/config/environment';
import { LlmStack, startLlmStack } from '../llm-stack';
import { ScriptedSpeechServer } from '../scripted-speech-server';
import { ScriptedTranscriptionServer } from '../scripted-transcription-server';
import { XiaozhiDevice, XiaozhiDeviceOptions } from './xiaozhi-device';

/** The token the gateway's configuration answer gives devices, and agents' token beside it. */
export const DEVICE_TOKEN = 'xiaozhi-device-secret';
export const AGENT_TOKEN = 'xiaozhi-agent-secret';

export interface XiaozhiStack extends LlmStack {
  stt: ScriptedTranscriptionServer;
  tts: ScriptedSpeechServer;
  /** A simulated device that asked for its configuration and connected as it says (hello done), closed with the stack. */
  device(options?: XiaozhiDeviceOptions): Promise<XiaozhiDevice>;
}

/**
 * The gateway with scripted OpenAI-compatible model, recognizer and synthesizer, all on
 * 127.0.0.1: what the xiaozhi tests start from. Devices get `DEVICE_TOKEN` from the
 * configuration answer; `AGENT_TOKEN` is the agents'.
 */
export async function startXiaozhiStack(settings: EnvironmentInput = {}): Promise<XiaozhiStack> {
  const stt = await ScriptedTranscriptionServer.start();
  const tts = await ScriptedSpeechServer.start();
  let stack: LlmStack;
  try {
    stack = await startLlmStack({
      STT_BASE_URL: stt.baseUrl,
      TTS_BASE_URL: tts.baseUrl,
      STT_TIMEOUT: 5,
      TTS_TIMEOUT: 5,
      AUTH_TOKENS: `${DEVICE_TOKEN},${AGENT_TOKEN}`,
      XIAOZHI_DEVICE_TOKEN: DEVICE_TOKEN,
      ...settings,
    });
  } catch (error) {
    await Promise.all([stt.close(), tts.close()]);
    throw error;
  }
  const devices: XiaozhiDevice[] = [];
  return {
    ...stack,
    stt,
    tts,
    device: async (options) => {
      const device = await bootDevice(stack.gateway.http('/xiaozhi/ota/'), options);
      devices.push(device);
      return device;
    },
    close: async () => {
      await Promise.all(devices.splice(0).map((device) => device.close()));
      await stack.close();
      await Promise.all([stt.close(), tts.close()]);
    },
  };
}

/**
 * A simulated device as it boots: it asks `otaUrl` (a gateway's `/xiaozhi/ota/`) for its
 * configuration and connects as the answer says (hello done). Closed again if either fails; the
 * caller closes it otherwise.
 */
export async function bootDevice(otaUrl: string, options?: XiaozhiDeviceOptions): Promise<XiaozhiDevice> {
  const device = new XiaozhiDevice(options);
  try {
    const answer = await device.requestConfiguration(otaUrl);
    if (answer.status !== 200) throw new Error(`The configuration request answered ${answer.status}: ${answer.text}`);
    await device.connect();
    return device;
  } catch (error) {
    await device.close();
    throw error;
  }
}
