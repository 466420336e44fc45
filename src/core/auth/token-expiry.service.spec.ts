import { EventEmitter } from 'events';
import type { IncomingMessage } from 'http';
import type { ConnectionRegistry } from '../ws/connection-registry';
import { TOKEN_EXPIRED_REASON, TokenExpiryService } from './token-expiry.service';

const requestOf = () => ({ socket: new EventEmitter() }) as unknown as IncomingMessage;

describe('TokenExpiryService', () => {
  it('closes the connections whose token expired with 1008, once, and forgets closed sockets', () => {
    const [early, late, gone] = [requestOf(), requestOf(), requestOf()];
    const connections = [early, late].map((request) => ({ request, close: jest.fn() }));
    const registry = { list: () => connections } as unknown as ConnectionRegistry;
    const expiry = new TokenExpiryService(registry);
    expiry.note(early, 1000);
    expiry.note(late, 5000);
    expiry.note(gone, 1000);
    gone.socket.emit('close');
    expect(expiry.sweep(999)).toBe(0);
    expect(expiry.sweep(1000)).toBe(1);
    expect(connections[0].close).toHaveBeenCalledWith(1008, TOKEN_EXPIRED_REASON);
    expect(connections[1].close).not.toHaveBeenCalled();
    expect(expiry.sweep(2000)).toBe(0);
    expect(expiry.sweep(5000)).toBe(1);
  });
});
