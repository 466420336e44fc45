import type { GatewayConnection } from '../core/ws/connection';
import { LlmConnectionState } from '../llm-gateway/llm-connection';
import type { FramingVersion } from './audio-framing';
import type { DeviceMcpClient } from './device-mcp-client';
import type { VoiceSession } from './voice-session';

/**
 * What the gateway keeps per xiaozhi connection: an LLM-gateway connection's state (its session,
 * turns and device tools: a xiaozhi turn is the same engine's), streaming sentences so the first
 * is spoken while the model writes, and announcing no session changes (the protocol has no words
 * for them); plus the device's binary framing, its voice session once `hello` has come, and its
 * MCP client when it announced `features.mcp`.
 */
export class XiaozhiConnectionState extends LlmConnectionState {
  override announcesSessions = false;
  /** The session id its hello was given; every message to it carries it. */
  readonly helloSessionId: string;
  /** Set by the hello; audio and listening before it are refused. */
  voice?: VoiceSession;
  mcp?: DeviceMcpClient;
  /** The device's names of its tools, by the catalogue's names (`self_light_set_rgb` for `self.light.set_rgb`). */
  readonly deviceToolNames = new Map<string, string>();

  constructor(
    /** `Protocol-Version` at the upgrade: how its binary messages are framed. */
    readonly framing: FramingVersion,
    helloSessionId: string,
  ) {
    super(true);
    this.helloSessionId = helloSessionId;
  }
}

export type XiaozhiConnection = GatewayConnection<XiaozhiConnectionState>;
