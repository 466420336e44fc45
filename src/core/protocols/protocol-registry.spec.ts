import type { DiscoveryService } from '@nestjs/core';
import { loadGatewayConfig } from '../../config/gateway-config';
import { ProtocolGateway } from '../ws/protocol-gateway.decorator';
import { ProtocolRegistry } from './protocol-registry';

@ProtocolGateway({ protocol: 'echo', path: '/echo/:room', aliases: ['/shout'] })
class EchoGateway {
  onFrameError(): undefined {
    return undefined;
  }
}

@ProtocolGateway({ protocol: 'alpha', path: '/alpha' })
class AlphaGateway {
  onFrameError(): undefined {
    return undefined;
  }
}

class NotAGateway {}

/** A registry over an app whose providers are `types` (a gateway provided twice counts once). */
const registryOf = (...types: unknown[]) =>
  new ProtocolRegistry({ getProviders: () => types.map((metatype) => ({ metatype })) } as unknown as DiscoveryService);
const context = { http: 'http://h:1', ws: 'ws://h:1', config: loadGatewayConfig({}) };

describe('ProtocolRegistry', () => {
  it('lists the declared protocols in order, then those only a gateway route names, with their routes for a summary', () => {
    const registry = registryOf(EchoGateway, NotAGateway, AlphaGateway, EchoGateway, undefined);
    registry.declare({ name: 'alpha', title: 'Alpha', summary: () => 'declared' });
    registry.declare({ name: 'http-only' });
    expect(registry.names()).toEqual(['alpha', 'http-only', 'echo']);
    expect(registry.summaryLines(context)).toEqual(['Alpha: declared', 'echo: ws://h:1/echo/<room>, ws://h:1/shout']);
  });

  it('refuses a protocol declared twice', () => {
    const registry = registryOf();
    registry.declare({ name: 'alpha' });
    expect(() => registry.declare({ name: 'alpha' })).toThrow('Protocol "alpha" is declared twice');
  });

  it("tells a path's protected resource by its declared prefix, whole segments only", () => {
    const registry = registryOf();
    registry.declare({ name: 'alpha', protectedResource: '/alpha' });
    expect(['/alpha', '/alpha/x', '/alphabet', '/'].map((path) => registry.protectedResourceOf(path))).toEqual(['/alpha', '/alpha', undefined, undefined]);
  });
});
