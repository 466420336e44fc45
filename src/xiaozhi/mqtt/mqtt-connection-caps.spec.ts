import { EventEmitter } from 'events';
import type { Socket } from 'net';
import { MqttConnectionCaps } from './mqtt-connection-caps';

/** What the caps read of a socket: its remote address, and its `close`. */
const socketFrom = (remoteAddress: string) => Object.assign(new EventEmitter(), { remoteAddress }) as unknown as Socket;

describe('MqttConnectionCaps', () => {
  it('refuses past the total, and past the per-address cap, and counts a closed connection out', () => {
    const caps = new MqttConnectionCaps(3, 2);
    const a1 = socketFrom('10.0.0.1');
    expect(caps.admit(a1)).toBeUndefined();
    expect(caps.admit(socketFrom('10.0.0.1'))).toBeUndefined();
    expect(caps.admit(socketFrom('10.0.0.1'))).toBe('address');
    expect(caps.admit(socketFrom('10.0.0.2'))).toBeUndefined();
    expect(caps.admit(socketFrom('10.0.0.3'))).toBe('total');
    expect(caps.open).toBe(3);
    a1.emit('close');
    expect(caps.open).toBe(2);
    expect(caps.admit(socketFrom('10.0.0.1'))).toBeUndefined();
    expect(caps.admit(socketFrom('10.0.0.1'))).toBe('total');
  });

  it('has no per-address cap at 0, and forgets an address with its last connection', () => {
    const caps = new MqttConnectionCaps(100, 0);
    const sockets = Array.from({ length: 50 }, () => socketFrom('10.0.0.9'));
    for (const socket of sockets) expect(caps.admit(socket)).toBeUndefined();
    for (const socket of sockets) socket.emit('close');
    expect(caps.open).toBe(0);
    expect((caps as unknown as { perAddress: Map<string, number> }).perAddress.size).toBe(0);
  });
});
