import { Inject, Injectable, Optional } from '@nestjs/common';
import type { OpusFormat } from '../assistant/audio/opus-format';
import { SPEECH_RECOGNIZER, SPEECH_SYNTHESIZER, SpeechRecognizer, SpeechSynthesizer } from '../assistant/speech-engines/speech-engine';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { BudgetService } from '../core/budgets/budget.service';
import { TurnStarter } from '../llm-gateway/turn-starter';
import { MetricsService } from '../metrics/metrics.service';
import { VoiceSession, VoiceSessionContext } from './voice-session';
import type { XiaozhiConnection } from './xiaozhi-connection';
import { XIAOZHI_PROTOCOL } from './xiaozhi-protocol-name';

/** Every xiaozhi connection's voice session is made here, with what they share: the turn engine, the speech engines, the voice settings and the metrics. */
@Injectable()
export class VoiceSessions {
  private readonly context: VoiceSessionContext;
  readonly outputFormat: OpusFormat;

  constructor(
    turns: TurnStarter,
    @Inject(SPEECH_RECOGNIZER) recognizer: SpeechRecognizer | null,
    @Inject(SPEECH_SYNTHESIZER) synthesizer: SpeechSynthesizer | null,
    @Inject(GATEWAY_CONFIG) config: GatewayConfig,
    budgets: BudgetService,
    @Optional() metrics?: MetricsService,
  ) {
    this.context = {
      turns,
      recognizer,
      synthesizer,
      settings: config.voice,
      budgets,
      count: (event) => metrics?.voiceEvent(XIAOZHI_PROTOCOL, event),
    };
    this.outputFormat = { sampleRate: config.xiaozhi.outputSampleRate, frameDurationMs: 60 };
  }

  /** The voice of a connection whose hello asked for `inputFormat`. */
  open(connection: XiaozhiConnection, inputFormat: OpusFormat): VoiceSession {
    return new VoiceSession(connection, this.context, inputFormat, this.outputFormat);
  }

  /** A count of the protocol's (audio before the hello, a device's bad MCP answer), outside a session. */
  count(event: Parameters<VoiceSessionContext['count']>[0]): void {
    this.context.count(event);
  }
}
