import type { XiaozhiConnection } from './xiaozhi-connection';

/**
 * A transport whose audio goes on a channel of its own, opened by the hello (MQTT + UDP): what it
 * adds to the server hello, and the `transport` the device's hello names. A WebSocket has none.
 */
export interface AudioTransport {
  /** The `transport` of the device's hello and of the server's (`udp`). */
  readonly helloTransport: string;
  /**
   * How far audio and messages, on their different channels, may overtake each other: an
   * answer's first audio waits this long after its `tts start`, and its `tts stop` this long after
   * its last audio. The firmware plays audio only while speaking, a state it enters on `tts start`
   * and leaves on `tts stop`, and drops what comes outside it.
   */
  readonly audioSkewMs: number;
  /** Opens (again, with fresh keys, on a second hello) the audio channel of the session `sessionId`: the fields the server hello adds. */
  openAudioChannel(sessionId: string): Record<string, unknown>;
}

/** The connection's audio transport, when its socket has one. */
export function audioTransportOf(connection: XiaozhiConnection): AudioTransport | undefined {
  const socket = connection.socket as unknown as Partial<AudioTransport>;
  return typeof socket.openAudioChannel === 'function' ? (socket as AudioTransport) : undefined;
}
