/**
 * What a xiaozhi firmware (78/xiaozhi-esp32) sends at boot, shared by the bench's simulated
 * devices: its configuration request (`main/ota.cc`) and its hello.
 */

/** The audio frame the bench's devices announce in their hello, milliseconds. */
export const FRAME_MS = 60;

/** The configuration answer's sections the bench reads. */
export interface ConfigurationAnswer {
  websocket?: { url?: string; token?: string };
  activation?: { code?: string; challenge?: string };
  [section: string]: unknown;
}

/** The configuration request (`main/ota.cc`): a POST with the board's description, answered with the WebSocket URL and token. */
export async function configurationOf(baseUrl: string, id: string, clientId: string): Promise<ConfigurationAnswer> {
  const response = await fetch(`${baseUrl}/xiaozhi/ota/`, {
    method: 'POST',
    headers: { 'device-id': id, 'client-id': clientId, 'user-agent': 'bench-board/1.0.0', 'accept-language': 'en-US', 'content-type': 'application/json' },
    body: JSON.stringify({ application: { name: 'xiaozhi', version: '1.0.0' }, board: { type: 'bench-board' } }),
  });
  if (response.status !== 200)
    throw new Error(`the configuration request of ${id} was answered HTTP ${response.status}: ${(await response.text()).slice(0, 200)}`);
  return (await response.json()) as ConfigurationAnswer;
}

/** The device's hello on a WebSocket session (protocol version 1, Opus at 16 kHz). */
export const DEVICE_HELLO = JSON.stringify({
  type: 'hello',
  version: 1,
  transport: 'websocket',
  features: { mcp: false },
  audio_params: { format: 'opus', sample_rate: 16000, channels: 1, frame_duration: FRAME_MS },
});

/** The headers a device opens its WebSocket session with. */
export const sessionHeaders = (token: string, id: string, clientId: string): Record<string, string> => ({
  authorization: token.includes(' ') ? token : `Bearer ${token}`,
  'protocol-version': '1',
  'device-id': id,
  'client-id': clientId,
});
