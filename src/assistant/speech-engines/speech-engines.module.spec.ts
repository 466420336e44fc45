import { Global, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { GATEWAY_CONFIG, loadGatewayConfig } from '../../config/gateway-config';
import { OpenAiRecognizer } from './openai-recognizer';
import { OpenAiSynthesizer } from './openai-synthesizer';
import { SPEECH_RECOGNIZER, SPEECH_SYNTHESIZER, SpeechRecognizer } from './speech-engine';
import { SpeechEnginesModule } from './speech-engines.module';

describe('SpeechEnginesModule', () => {
  /** The engines an app gets with `settings` as its configuration (global, as the gateway's is). */
  async function enginesOf(settings: Record<string, string>, engines?: Parameters<typeof SpeechEnginesModule.register>[0]) {
    @Global()
    @Module({ providers: [{ provide: GATEWAY_CONFIG, useValue: loadGatewayConfig(settings) }], exports: [GATEWAY_CONFIG] })
    class ConfigModule {}
    const app = await Test.createTestingModule({ imports: [ConfigModule, SpeechEnginesModule.register(engines)] }).compile();
    return { recognizer: app.get<unknown>(SPEECH_RECOGNIZER), synthesizer: app.get<unknown>(SPEECH_SYNTHESIZER) };
  }

  it('provides null for both engines while their base URLs are unset', async () => {
    expect(await enginesOf({})).toEqual({ recognizer: null, synthesizer: null });
  });

  it('builds the OpenAI-compatible engines from STT_BASE_URL and TTS_BASE_URL', async () => {
    const engines = await enginesOf({ STT_BASE_URL: 'http://127.0.0.1:8000/v1/', TTS_BASE_URL: 'http://127.0.0.1:8880/v1/' });
    expect(engines.recognizer).toBeInstanceOf(OpenAiRecognizer);
    expect(engines.synthesizer).toBeInstanceOf(OpenAiSynthesizer);
  });

  it('takes an engine of your own in place of the configured one, and keeps the other', async () => {
    const mine: SpeechRecognizer = { transcribe: () => Promise.resolve({ text: 'mine' }) };
    const engines = await enginesOf({ TTS_BASE_URL: 'http://127.0.0.1:8880/v1/' }, { recognizer: { useValue: mine } });
    expect(engines.recognizer).toBe(mine);
    expect(engines.synthesizer).toBeInstanceOf(OpenAiSynthesizer);
  });
});
