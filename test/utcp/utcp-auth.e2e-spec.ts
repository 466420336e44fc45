import { RunningGateway, startGateway } from '../support/gateway';
import { TestSocket, UpgradeRefused } from '../support/test-socket';
import { Utcp01Client, UtcpRequestFailed } from '../support/utcp01-client';
import { Utcp1WebSocketClient } from '../support/utcp1-client';

const TOKEN = 'device-token';

describe('UTCP with auth on', () => {
  let gateway: RunningGateway;

  beforeAll(async () => {
    gateway = await startGateway({ AUTH_TOKENS: `${TOKEN},other-token` });
  });
  afterAll(() => gateway.close());

  describe('at /utcp', () => {
    it.each(['query', 'header', 'message'] as const)('serves a 0.1 client that sends its token in the %s', async (via) => {
      const client = await Utcp01Client.connect(gateway.ws('/utcp'), { token: TOKEN, via });
      // With `message`, the call leaves right behind the auth frame, without waiting for an answer.
      await expect(client.call('calculator', { a: 2, b: 3 })).resolves.toMatchObject({ result: 5 });
      expect(client.unmatched).toEqual(via === 'message' ? [{ type: 'auth_ok' }] : []);
      await client.close();
    });

    it.each([
      ['a wrong bearer token', '/utcp', { Authorization: 'Bearer nope' }, 403],
      ['a wrong query token', '/utcp?token=nope', {}, 403],
      ['an empty query token', '/utcp?token=', {}, 401],
      ['a credential of another scheme', '/utcp', { Authorization: 'Basic dXNlcjpwYXNz' }, 401],
      ['a wrong token on a per-tool path', '/utcp/calculator', { Authorization: 'Bearer nope' }, 403],
    ])('refuses %s at the upgrade, with no socket', async (_name, path, headers, status) => {
      const refusal = (await TestSocket.open(gateway.ws(path), { headers }).catch((error) => error)) as UpgradeRefused;
      expect(refusal).toBeInstanceOf(UpgradeRefused);
      expect(refusal.status).toBe(status);
      if (status === 401) expect(refusal.headers['www-authenticate']).toBe('Bearer');
    });

    it('serves nothing but an auth frame before authentication, then everything', async () => {
      const socket = await TestSocket.open(gateway.ws('/utcp'));
      const notAuthenticated = { code: 'UNAUTHORIZED', message: expect.stringMatching(/^Not authenticated: send \{"type":"auth"/) };
      socket.send({ type: 'call', id: 'c1', tool: 'calculator', params: { a: 1, b: 2 } });
      expect(await socket.next()).toEqual({ type: 'error', id: 'c1', error: notAuthenticated });
      socket.send({ type: 'utcp' });
      expect(await socket.next()).toEqual({ type: 'error', id: null, error: notAuthenticated });
      socket.send({ type: 'discover', id: 'd1' });
      expect(await socket.next()).toEqual({ type: 'error', id: 'd1', error: notAuthenticated });
      socket.send('not even JSON');
      expect(await socket.next()).toEqual({ type: 'error', id: null, error: notAuthenticated });
      socket.send({ type: 'auth', token: 'other-token', id: 'a1' });
      expect(await socket.next()).toEqual({ type: 'auth_ok', id: 'a1' });
      socket.send({ type: 'call', id: 'c2', tool: 'calculator', params: { a: 1, b: 2 } });
      expect(await socket.next()).toEqual({ type: 'result', id: 'c2', result: 3 });
      await socket.close();
    });

    it.each([
      ['a wrong token', { type: 'auth', token: 'nope', id: 'a1' }, 'a1', 'FORBIDDEN', /Invalid token/],
      ['no token', { type: 'auth' }, null, 'UNAUTHORIZED', /needs a token/],
    ])('answers an auth frame with %s with an error, then closes (1008)', async (_name, frame, id, code, message) => {
      const socket = await TestSocket.open(gateway.ws('/utcp'));
      socket.send(frame);
      expect(await socket.next()).toEqual({ type: 'error', id, error: { code, message: expect.stringMatching(message) } });
      expect(await socket.closed).toEqual({ code: 1008, reason: 'Authentication failed' });
    });
  });

  describe('the manual', () => {
    it('needs the token over HTTP too', async () => {
      const anonymous = await fetch(gateway.http('/utcp'));
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get('www-authenticate')).toBe('Bearer');
      expect((await fetch(gateway.http('/utcp'), { headers: { Authorization: 'Bearer nope' } })).status).toBe(403);
    });

    it('has templates that send the token, taken from a client variable rather than written in', async () => {
      const response = await fetch(gateway.http('/utcp'), { headers: { Authorization: `Bearer ${TOKEN}` } });
      const manual = (await response.json()) as any;
      for (const tool of manual.tools) {
        expect(tool.tool_call_template.auth).toEqual({
          auth_type: 'api_key',
          api_key: 'Bearer ${GATEWAY_TOKEN}',
          var_name: 'Authorization',
          location: 'header',
        });
      }
      expect(JSON.stringify(manual)).not.toContain(TOKEN);
    });

    it('lets a 1.x client discover and call with its token in its variables', async () => {
      const manualTemplate = {
        name: 'gw',
        call_template_type: 'websocket' as const,
        url: gateway.ws('/utcp'),
        auth: { auth_type: 'api_key' as const, api_key: 'Bearer ${TOKEN}', var_name: 'Authorization', location: 'header' as const },
      };
      const client = new Utcp1WebSocketClient({ gw_TOKEN: TOKEN, gw_GATEWAY_TOKEN: TOKEN });
      await client.registerManual(manualTemplate);
      await expect(client.callTool('gw.calculator', { a: 4, b: 5, operation: 'multiply' })).resolves.toBe(20);
      await client.close();

      const forgetful = new Utcp1WebSocketClient({ gw_TOKEN: TOKEN });
      await forgetful.registerManual(manualTemplate);
      await expect(forgetful.callTool('gw.calculator', { a: 1, b: 1 })).rejects.toThrow(/gw_GATEWAY_TOKEN/);
      await forgetful.close();

      const wrong = new Utcp1WebSocketClient({ gw_TOKEN: 'nope' });
      await expect(wrong.registerManual(manualTemplate)).rejects.toMatchObject({ status: 403 });
    });
  });

  describe('on a per-tool path', () => {
    it('takes an auth frame first, acknowledges it, then serves the calls sent right behind it', async () => {
      const socket = await TestSocket.open(gateway.ws('/utcp/calculator'));
      socket.send({ a: 1, b: 2 });
      expect(await socket.next()).toEqual({ type: 'tool_error', code: 'UNAUTHORIZED', error: expect.stringMatching(/^Not authenticated/) });
      socket.send({ type: 'auth', token: TOKEN });
      socket.send({ a: 1, b: 2 });
      expect(await socket.next()).toEqual({ type: 'auth_ok' });
      expect(await socket.next()).toBe(3);
      await socket.close();
    });

    it('tells a client without a token nothing about which tools exist', async () => {
      await expect(TestSocket.open(gateway.ws('/utcp/no_such_tool'), { headers: { Authorization: `Bearer ${TOKEN}` } })).rejects.toMatchObject({ status: 404 });
      const socket = await TestSocket.open(gateway.ws('/utcp/no_such_tool'));
      socket.send({ type: 'auth', token: TOKEN });
      socket.send({});
      expect(await socket.next()).toEqual({ type: 'auth_ok' });
      expect(await socket.next()).toEqual({ type: 'tool_error', code: 'TOOL_NOT_FOUND', error: 'Unknown tool "no_such_tool"' });
      await socket.close();
    });

    it('answers a wrong auth frame with a tool_error, then closes (1008)', async () => {
      const socket = await TestSocket.open(gateway.ws('/utcp/calculator'));
      socket.send({ type: 'auth', token: 'nope' });
      expect(await socket.next()).toEqual({ type: 'tool_error', code: 'FORBIDDEN', error: 'Invalid token' });
      expect((await socket.closed).code).toBe(1008);
    });
  });

  it('makes a wrong call after authentication an ordinary error that leaves the connection open', async () => {
    const client = await Utcp01Client.connect(gateway.ws('/utcp'), { token: TOKEN, via: 'message' });
    await expect(client.call('no_such_tool', {})).rejects.toBeInstanceOf(UtcpRequestFailed);
    await expect(client.call('calculator', { a: 1, b: 1 })).resolves.toMatchObject({ result: 2 });
    await client.close();
  });
});
