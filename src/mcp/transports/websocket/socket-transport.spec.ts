import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { EnvelopeTransport } from '../envelope/envelope.transport';
import { PlainFrameTransport } from './plain-frame.transport';

/** Just enough of a connection: whether it is open, and what was sent. */
function fakeSocket(open = true) {
  const sent: string[] = [];
  return { socket: { send: (text: string) => open && sent.push(text) > 0 }, sent };
}

const request: JSONRPCMessage = { jsonrpc: '2.0', id: 1, method: 'tools/list' };

describe('the WebSocket transports', () => {
  it('hand JSON-RPC messages to the server and say why anything else is not one', () => {
    const transport = new PlainFrameTransport(fakeSocket().socket);
    const received: unknown[] = [];
    transport.onmessage = (message) => received.push(message);
    expect(transport.deliver(request)).toBeUndefined();
    expect(transport.deliver({ jsonrpc: '2.0', method: 'notifications/initialized' })).toBeUndefined();
    expect(transport.deliver({ jsonrpc: '2.0', id: 1, result: {} })).toBeUndefined();
    for (const bad of [{ id: 1, method: 'x' }, { jsonrpc: '1.0', id: 1, method: 'x' }, { jsonrpc: '2.0', id: 1, method: 5 }, [request], 'text', null]) {
      expect(transport.deliver(bad)).toMatch(/^not a JSON-RPC 2\.0 request, notification or response/);
    }
    expect(received).toHaveLength(3);
  });

  it('write plain frames, or message envelopes with the session id', async () => {
    const plain = fakeSocket();
    await new PlainFrameTransport(plain.socket).send(request);
    expect(plain.sent.map((text) => JSON.parse(text))).toEqual([request]);

    const wrapped = fakeSocket();
    await new EnvelopeTransport(wrapped.socket, 'ws-session-1').send(request);
    expect(wrapped.sent.map((text) => JSON.parse(text))).toEqual([
      { type: 'message', sessionId: 'ws-session-1', payload: request, timestamp: expect.any(Number) },
    ]);
  });

  it('close once, telling the server, and then neither send nor deliver', async () => {
    const { socket, sent } = fakeSocket();
    const transport = new PlainFrameTransport(socket);
    let closes = 0;
    let delivered = 0;
    transport.onclose = () => (closes += 1);
    transport.onmessage = () => (delivered += 1);
    await transport.close();
    await transport.close();
    expect(closes).toBe(1);
    await expect(transport.send(request)).rejects.toThrow(/closed/);
    expect(transport.deliver(request)).toBeUndefined();
    expect([sent.length, delivered]).toEqual([0, 0]);
  });

  it('refuse to send once the socket is no longer open', async () => {
    await expect(new PlainFrameTransport(fakeSocket(false).socket).send(request)).rejects.toThrow(/closed/);
  });
});
