import type { IncomingMessage } from 'http';
import { callTemplateParameter, publicHttpBase, publicWebSocketBase, streamParameter } from './request-endpoint';

const request = (headers: Record<string, string | string[]>, socket: Partial<{ encrypted: boolean; localAddress: string; localPort: number }> = {}) =>
  ({ headers, socket: { localAddress: '10.0.0.5', localPort: 9400, ...socket } }) as unknown as IncomingMessage;

describe('publicWebSocketBase', () => {
  it.each([
    ['the Host the client used', { host: 'voice.local:9400' }, {}, 'ws://voice.local:9400'],
    ['a TLS connection', { host: 'voice.local' }, { encrypted: true }, 'wss://voice.local'],
    [
      'a proxy that terminated TLS',
      { host: 'internal:9400', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'tools.example.com' },
      {},
      'wss://tools.example.com',
    ],
    ['a proxy speaking plain HTTP to a TLS listener', { host: 'voice.local', 'x-forwarded-proto': 'http' }, { encrypted: true }, 'ws://voice.local'],
    [
      'the first of several proxies',
      { host: 'internal', 'x-forwarded-proto': 'https, http', 'x-forwarded-host': 'edge.example.com, mid.example.com' },
      {},
      'wss://edge.example.com',
    ],
    ['a forwarded prefix', { host: 'internal', 'x-forwarded-prefix': 'gateway/v1/' }, {}, 'ws://internal/gateway/v1'],
    ['a root prefix', { host: 'internal', 'x-forwarded-prefix': '/' }, {}, 'ws://internal'],
    ['an IPv6 host', { host: '[::1]:9400' }, {}, 'ws://[::1]:9400'],
    ['no Host at all', {}, { localAddress: '::1', localPort: 9401 }, 'ws://[::1]:9401'],
  ])('follows %s', (_name, headers, socket, base) => {
    expect(publicWebSocketBase(request(headers, socket))).toBe(base);
  });

  it.each([
    ['a host with a path', { host: 'voice.local', 'x-forwarded-host': 'evil.example.com/steal?x=' }, 'ws://voice.local'],
    ['an unknown scheme', { host: 'voice.local', 'x-forwarded-proto': 'gopher' }, 'ws://voice.local'],
    ['a prefix a UTCP client would read as a variable', { host: 'voice.local', 'x-forwarded-prefix': '/${SECRET}' }, 'ws://voice.local'],
    ['a prefix with a query', { host: 'voice.local', 'x-forwarded-prefix': '/gw?x=1' }, 'ws://voice.local'],
  ])('ignores %s', (_name, headers, base) => {
    expect(publicWebSocketBase(request(headers))).toBe(base);
  });
});

describe('streamParameter', () => {
  it.each([
    ['/utcp', false],
    ['/utcp?stream=false', false],
    ['/utcp?stream=0', false],
    ['/utcp/countdown?stream=true', true],
    ['/utcp/countdown?token=x&stream=1', true],
    ['/utcp?stream=yes', undefined],
    ['/utcp?stream=', undefined],
  ])('%s -> %s', (url, streaming) => {
    expect(streamParameter(url)).toBe(streaming);
  });
});

describe('publicHttpBase', () => {
  it.each([
    ['the Host the client used', { host: 'voice.local:9400' }, {}, 'http://voice.local:9400'],
    ['a TLS connection', { host: 'voice.local' }, { encrypted: true }, 'https://voice.local'],
    [
      'a proxy that terminated TLS, with a prefix',
      { host: 'internal', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'tools.example.com', 'x-forwarded-prefix': '/gw' },
      {},
      'https://tools.example.com/gw',
    ],
  ])('follows %s, as the websocket base does', (_name, headers, socket, base) => {
    expect(publicHttpBase(request(headers, socket))).toBe(base);
  });
});

describe('callTemplateParameter', () => {
  it.each([
    ['/utcp', 'websocket'],
    ['/utcp?call_template=websocket', 'websocket'],
    ['/utcp?call_template=http&stream=true', 'http'],
    ['/utcp?call_template=HTTP', undefined],
    ['/utcp?call_template=sse', undefined],
    ['/utcp?call_template=', undefined],
  ])('%s -> %s', (url, type) => {
    expect(callTemplateParameter(url)).toBe(type);
  });
});
