import type { EnvironmentInput } from '../../../src/config/environment';
import { LlmStack, startLlmStack } from '../llm-stack';
import { ScriptedSpeechServer } from '../scripted-speech-server';
import { ScriptedTranscriptionServer } from '../scripted-transcription-server';
import { TcpProxy } from '../tcp-proxy';
import { XiaozhiDevice, XiaozhiDeviceOptions } from './xiaozhi-device';

/** The token the gateway's configuration answer gives devices, and agents' token beside it. */
export const DEVICE_TOKEN = 'xiaozhi-device-secret';
export const AGENT_TOKEN = 'xiaozhi-agent-secret';

export interface XiaozhiStack extends LlmStack {
  stt: ScriptedTranscriptionServer;
  tts: ScriptedSpeechServer;
  /** With `proxiedEngines`: the proxies the gateway reaches the recognizer and the synthesizer through, to take them away and bring them back. */
  sttProxy?: TcpProxy;
  ttsProxy?: TcpProxy;
  /** A simulated device that asked for its configuration and connected as it says (hello done), closed with the stack. */
  device(options?: XiaozhiDeviceOptions): Promise<XiaozhiDevice>;
}

/**
 * The gateway with scripted OpenAI-compatible model, recognizer and synthesizer, all on
 * 127.0.0.1: what the xiaozhi tests start from. Devices get `DEVICE_TOKEN` from the
 * configuration answer; `AGENT_TOKEN` is the agents'. With `proxiedEngines`, the gateway reaches
 * the recognizer and the synthesizer through a {@link TcpProxy} each, which a test interrupts to
 * take the engine down (connections refused) and restores.
 */
export async function startXiaozhiStack(settings: EnvironmentInput = {}, options: { proxiedEngines?: boolean } = {}): Promise<XiaozhiStack> {
  const stt = await ScriptedTranscriptionServer.start();
  const tts = await ScriptedSpeechServer.start();
  const sttProxy = options.proxiedEngines ? await TcpProxy.start('127.0.0.1', portOf(stt.baseUrl)) : undefined;
  const ttsProxy = options.proxiedEngines ? await TcpProxy.start('127.0.0.1', portOf(tts.baseUrl)) : undefined;
  const closeEngines = () => Promise.all([stt.close(), tts.close(), sttProxy?.close(), ttsProxy?.close()]);
  let stack: LlmStack;
  try {
    stack = await startLlmStack({
      STT_BASE_URL: sttProxy ? `http://127.0.0.1:${sttProxy.port}/v1/` : stt.baseUrl,
      TTS_BASE_URL: ttsProxy ? `http://127.0.0.1:${ttsProxy.port}/v1/` : tts.baseUrl,
      STT_TIMEOUT: 5,
      TTS_TIMEOUT: 5,
      AUTH_TOKENS: `${DEVICE_TOKEN},${AGENT_TOKEN}`,
      XIAOZHI_DEVICE_TOKEN: DEVICE_TOKEN,
      ...settings,
    });
  } catch (error) {
    await closeEngines();
    throw error;
  }
  const devices: XiaozhiDevice[] = [];
  return {
    ...stack,
    stt,
    tts,
    sttProxy,
    ttsProxy,
    device: async (options) => {
      const device = await bootDevice(stack.gateway.http('/xiaozhi/ota/'), options);
      devices.push(device);
      return device;
    },
    close: async () => {
      await Promise.all(devices.splice(0).map((device) => device.close()));
      await stack.close();
      await closeEngines();
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

const portOf = (baseUrl: string): number => Number(new URL(baseUrl).port);
