import { DynamicModule, Module, Provider } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';
import { OpenAiRecognizer } from './openai-recognizer';
import { OpenAiSynthesizer } from './openai-synthesizer';
import { SPEECH_RECOGNIZER, SPEECH_SYNTHESIZER, SpeechRecognizer, SpeechSynthesizer } from './speech-engine';

/** How an engine of your own is provided: a Nest provider without its token (`useClass`, `useFactory`, `useValue`, `useExisting`). */
export type EngineProvider = Provider extends infer Each ? (Each extends { provide: unknown } ? Omit<Each, 'provide'> : never) : never;

const configuredRecognizer: Provider = {
  provide: SPEECH_RECOGNIZER,
  inject: [GATEWAY_CONFIG],
  useFactory: ({ speech }: GatewayConfig): SpeechRecognizer | null => (speech.recognizer ? new OpenAiRecognizer(speech.recognizer) : null),
};

const configuredSynthesizer: Provider = {
  provide: SPEECH_SYNTHESIZER,
  inject: [GATEWAY_CONFIG],
  useFactory: ({ speech }: GatewayConfig): SpeechSynthesizer | null => (speech.synthesizer ? new OpenAiSynthesizer(speech.synthesizer) : null),
};

/**
 * The speech engines a voice session hears and speaks through, under {@link SPEECH_RECOGNIZER}
 * and {@link SPEECH_SYNTHESIZER}: by default the OpenAI-compatible servers of the `STT_*` and
 * `TTS_*` settings (`null` for one that is off, so the session can refuse audio with a clear
 * alert), or engines of your own in place of either. Only {@link register} declares providers, so
 * a replaced engine is never built beside its replacement.
 */
@Module({})
export class SpeechEnginesModule {
  /**
   * The engines, yours in place of the configured ones where given:
   * `SpeechEnginesModule.register({ recognizer: { useClass: MyRecognizer } })`.
   */
  static register(engines: { recognizer?: EngineProvider; synthesizer?: EngineProvider } = {}): DynamicModule {
    const recognizer = engines.recognizer ? ({ ...engines.recognizer, provide: SPEECH_RECOGNIZER } as Provider) : configuredRecognizer;
    const synthesizer = engines.synthesizer ? ({ ...engines.synthesizer, provide: SPEECH_SYNTHESIZER } as Provider) : configuredSynthesizer;
    return { module: SpeechEnginesModule, providers: [recognizer, synthesizer], exports: [SPEECH_RECOGNIZER, SPEECH_SYNTHESIZER] };
  }
}
