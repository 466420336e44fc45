import { firstValueFrom } from 'rxjs';
import { languageOfText } from '../assistant/speech/spoken-forms';
import { cleanForSpeech } from '../assistant/speech/clean-for-speech';
import { PUSH_CUT, type PushEnd, type QueuedPush } from '../fleet/device-link';
import type { ClientToolsService } from '../llm-gateway/client-tools.service';
import { busy, ConnectionDeviceLink, unheard } from '../llm-gateway/device-link';
import type { VoiceSession } from './voice-session';
import type { XiaozhiConnection } from './xiaozhi-connection';
import { XIAOZHI_PROTOCOL } from './xiaozhi-protocol-name';

/**
 * A xiaozhi device as the fleet drives it: a pushed sentence or a due reminder is synthesized
 * and played, a pushed turn is answered aloud, each in the connection's queue after the turn in
 * flight (unless `interrupt` cuts it). Its MCP tools are its tools for agents.
 */
export class XiaozhiDeviceLink extends ConnectionDeviceLink<XiaozhiConnection> {
  readonly protocol = XIAOZHI_PROTOCOL;

  constructor(
    deviceId: string,
    owner: string | undefined,
    connection: XiaozhiConnection,
    clientTools: ClientToolsService,
    private readonly voice: VoiceSession,
    readonly userAgent: string | undefined,
  ) {
    super(deviceId, owner, connection, clientTools);
  }

  say(_turnId: string, text: string, options: { interrupt?: boolean }): QueuedPush {
    try {
      const { waiting, started, finished } = this.voice.say(cleanForSpeech(text, languageOfText(text)), options.interrupt ?? false);
      return { waiting, started: started.catch(() => Promise.reject(unheard(this.deviceId))), finished };
    } catch (error) {
      throw busy(this.deviceId, error);
    }
  }

  /** Reached the device once the turn begins (it answers aloud; its first words follow once the model writes them); finished once its answer's `tts stop` went out. */
  startTurn(turnId: string, text: string): QueuedPush {
    const waiting = !this.connection.queue().idle;
    let end!: (how: PushEnd) => void;
    const finished = new Promise<PushEnd>((resolve) => (end = resolve));
    let turn;
    try {
      turn = this.voice.startTurn(text, { turnId, origin: 'push', ended: end });
    } catch (error) {
      throw busy(this.deviceId, error);
    }
    const started = firstValueFrom(turn.frames).then(
      () => {
        if (!this.connection.isOpen) throw unheard(this.deviceId);
      },
      () => Promise.reject(unheard(this.deviceId)),
    );
    // A turn that never began (the connection closed while it waited) ends with its frames, unsaid.
    void started.catch(() => end({ state: 'interrupted', reason: PUSH_CUT.disconnected }));
    return { waiting, started, finished };
  }
}
