import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { TestSocket, UpgradeRefused } from './test-socket';

/** Where a gateway answers: its HTTP and WebSocket URLs by path (a `RunningGateway`, or a port of a child process). */
export interface GatewayAddress {
  http(path: string): string;
  ws(path: string): string;
}

export const onPort = (port: number): GatewayAddress => ({
  http: (path) => `http://127.0.0.1:${port}${path}`,
  ws: (path) => `ws://127.0.0.1:${port}${path}`,
});

export const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

export async function postJson(at: GatewayAddress, path: string, token: string, body: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(at.http(path), {
    method: 'POST',
    headers: { ...bearer(token), 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

export async function getJson(at: GatewayAddress, path: string, token: string): Promise<{ status: number; body: any }> {
  const response = await fetch(at.http(path), { headers: bearer(token) });
  return { status: response.status, body: await response.json() };
}

/** A device socket on the LLM gateway, its `status: connected` read. */
export async function connectDevice(at: GatewayAddress, id: string, token: string): Promise<TestSocket> {
  const socket = await TestSocket.open(at.ws('/'), { headers: { ...bearer(token), 'Device-Id': id } });
  const connected = await socket.next(5000);
  if (connected.type !== 'status' || connected.status !== 'connected') throw new Error(`Expected status connected, got ${JSON.stringify(connected)}`);
  return socket;
}

/** The status an upgrade as device `id` is refused with; `undefined` (and the socket closed) if it was accepted. */
export async function deviceRefusal(at: GatewayAddress, id: string, token: string): Promise<number | undefined> {
  try {
    const socket = await TestSocket.open(at.ws('/'), { headers: { ...bearer(token), 'Device-Id': id } });
    await socket.close();
    return undefined;
  } catch (error) {
    if (error instanceof UpgradeRefused) return error.status;
    throw error;
  }
}

/** An MCP client over Streamable HTTP with `token`. */
export async function mcpAgent(at: GatewayAddress, token: string): Promise<Client> {
  const client = new Client({ name: 'fleet-test-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(at.http('/mcp')), { requestInit: { headers: bearer(token) } }));
  return client;
}

/** The texts of the pushed answers a device hears until it has heard `count` (each `llm_response` marked push). */
export async function pushedTexts(device: TestSocket, count: number, timeoutMs = 5000): Promise<string[]> {
  const heard: string[] = [];
  while (heard.length < count) {
    const frame = await device.next(timeoutMs);
    if (frame.type === 'llm_response' && frame.origin === 'push') heard.push(frame.content);
  }
  return heard;
}

/** Polls `condition` every 25 ms until it holds, or fails after `timeoutMs`. */
export async function eventually(condition: () => boolean | Promise<boolean>, timeoutMs = 5000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
