import { Logger, Module } from '@nestjs/common';
import { mkdtempSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import {
  BearerAuthGuard,
  CalculatorModule,
  ConnectionRegistry,
  describeException,
  type FrameConnection,
  type GatewayConnection,
  GatewayError,
  GatewayErrorCode,
  OnFrame,
  ProtocolGateway,
  type ProtocolGatewayHooks,
  ProtocolRegistry,
  thenMaybe,
  ToolCallScope,
  ToolCallService,
} from '../../src';
import { RunningGateway, startGateway } from '../support/gateway';
import { eventually } from '../support/probing';
import { TestSocket, UpgradeRefused } from '../support/test-socket';

/**
 * A fifth protocol, written by following docs/architecture.md ("Adding a protocol") alone, and
 * from the package's entry alone: a gateway class on a route, a schema per frame, a handler per
 * frame, errors in its own words, tool calls through the core. Everything the route decides
 * (auth at the upgrade, the connection cap, the keep-alive, frames checked and refused) it gets
 * without code of its own; and the route's protocol is one the core knows: tokens may be
 * granted it, its connections are counted in the metrics and it is in the startup summary.
 */
const callSchema = {
  type: 'object',
  properties: { type: { const: 'call' }, id: { type: 'integer' }, tool: { type: 'string' }, args: { type: 'object' } },
  required: ['type', 'id', 'tool'],
} as const;

interface CallFrame {
  id: number;
  tool: string;
  args?: Record<string, unknown>;
}

@ProtocolGateway({ protocol: 'echo', path: '/echo', upgradeGuards: [BearerAuthGuard], connectionCap: { setting: 'ECHO_MAX', limit: () => 2, status: 503 } })
class EchoGateway implements ProtocolGatewayHooks<{ calls: number }> {
  private readonly logger = new Logger('Echo');

  constructor(private readonly tools: ToolCallService) {}

  onOpen(connection: GatewayConnection<{ calls: number }>): void {
    connection.state = { calls: 0 };
    connection.send({ type: 'hello', you: connection.principal });
  }

  @OnFrame('echo', { schema: { type: 'object', properties: { type: { const: 'echo' }, text: { type: 'string' } }, required: ['type', 'text'] } })
  echo(frame: { text: string }) {
    return { type: 'echo', text: frame.text };
  }

  @OnFrame('call', { schema: callSchema })
  call(frame: CallFrame, connection: GatewayConnection<{ calls: number }>) {
    connection.state.calls += 1;
    return thenMaybe(this.tools.call(ToolCallScope.ofConnection(connection), frame.tool, frame.args ?? {}), (outcome) =>
      outcome.ok ? { type: 'result', id: frame.id, value: outcome.value } : { type: 'failed', id: frame.id, code: outcome.code, message: outcome.message },
    );
  }

  @OnFrame('boom')
  boom(): never {
    throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, 'no booms here');
  }

  onFrameError(error: unknown, _frame: unknown, _connection: FrameConnection) {
    const { code, message } = describeException(error, this.logger);
    return { type: 'oops', code, message };
  }
}

@Module({ providers: [EchoGateway] })
class EchoModule {}

/** Named tokens: one granted the echo protocol alone, one granted MCP alone. */
const TOKENS = `
tokens:
  - name: echo-only
    token: echo-only-secret
    protocols: [echo]
  - name: mcp-only
    token: mcp-only-secret
    protocols: [mcp]
`;

describe('a protocol added by copying the pattern', () => {
  let gateway: RunningGateway;
  let dir: string;
  const headers = { Authorization: 'Bearer echo-token' };
  const logged: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vtg-echo-'));
    writeFileSync(join(dir, 'tokens.yaml'), TOKENS, { mode: 0o600 });
    const log = jest.spyOn(Logger.prototype, 'log').mockImplementation((message: unknown) => void logged.push(String(message)));
    try {
      gateway = await startGateway(
        { AUTH_TOKENS: 'echo-token', AUTH_TOKENS_FILE: join(dir, 'tokens.yaml'), CLOUD_PING_INTERVAL: 0.05, CLOUD_PING_TIMEOUT: 0.3 },
        [CalculatorModule, EchoModule],
      );
    } finally {
      log.mockRestore();
    }
  });
  afterAll(async () => {
    await gateway.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves its frames, calls tools through the core, and words failures its own way', async () => {
    const client = await TestSocket.open(gateway.ws('/echo'), { headers });
    expect(await client.next()).toEqual({ type: 'hello', you: expect.stringMatching(/^token:/) });
    client.send({ type: 'echo', text: 'hi' });
    expect(await client.next()).toEqual({ type: 'echo', text: 'hi' });
    client.send({ type: 'call', id: 1, tool: 'calculator', args: { a: 2, b: 3 } });
    expect(await client.next()).toEqual({ type: 'result', id: 1, value: 5 });
    client.send({ type: 'call', id: 2, tool: 'calculator', args: { a: 'two' } });
    expect(await client.next()).toMatchObject({ type: 'failed', id: 2, code: 'INVALID_TOOL_PARAMETERS' });
    client.send({ type: 'echo' });
    expect(await client.next()).toMatchObject({ type: 'oops', code: 'INVALID_MESSAGE' });
    client.send({ type: 'nope' });
    expect(await client.next()).toMatchObject({
      type: 'oops',
      code: 'UNKNOWN_MESSAGE_TYPE',
      message: expect.stringMatching(/expected "echo", "call" or "boom"/),
    });
    client.send({ type: 'boom' });
    expect(await client.next()).toEqual({ type: 'oops', code: 'INVALID_MESSAGE', message: 'no booms here' });
    await client.close();
  });

  it('gets auth at the upgrade, its connection cap and the keep-alive from the route, with no code of its own', async () => {
    await eventually(() => gateway.app.get(ConnectionRegistry).count('echo') === 0, "the first test's connection gone");
    const refused = (await TestSocket.open(gateway.ws('/echo')).catch((error) => error)) as UpgradeRefused;
    expect(refused.status).toBe(401);
    const [first, second] = await Promise.all([TestSocket.open(gateway.ws('/echo'), { headers }), TestSocket.open(gateway.ws('/echo'), { headers })]);
    const third = (await TestSocket.open(gateway.ws('/echo'), { headers }).catch((error) => error)) as UpgradeRefused;
    expect([third.status, JSON.parse(third.body).error.message]).toEqual([503, 'Too many echo connections: at most 2 (ECHO_MAX)']);
    // A peer that stops answering pings is dropped by the route's heartbeat.
    (first.socket as unknown as { _socket: { pause(): void } })._socket.pause();
    await new Promise((resolve) => setTimeout(resolve, 1500));
    (first.socket as unknown as { _socket: { resume(): void } })._socket.resume();
    expect(await first.closed).toEqual({ code: 1001, reason: 'Heartbeat timeout' });
    expect(second.socket.readyState).toBe(second.socket.OPEN);
    await second.close();
  });

  it('is a protocol tokens may be granted: a token granted echo opens it, a token granted mcp alone is refused at the upgrade', async () => {
    const granted = await TestSocket.open(gateway.ws('/echo'), { headers: { Authorization: 'Bearer echo-only-secret' } });
    expect(await granted.next()).toEqual({ type: 'hello', you: 'name:echo-only' });
    await granted.close();
    const refused = (await TestSocket.open(gateway.ws('/echo'), { headers: { Authorization: 'Bearer mcp-only-secret' } }).catch(
      (error) => error,
    )) as UpgradeRefused;
    expect(refused).toBeInstanceOf(UpgradeRefused);
    expect([refused.status, JSON.parse(refused.body).error.message]).toEqual([403, 'Token "mcp-only" may not use echo (its protocols: mcp)']);
  });

  it('has its connections counted in the metrics, zero included', async () => {
    await eventually(() => gateway.app.get(ConnectionRegistry).count('echo') === 0, 'the earlier connections gone');
    const metrics = await (await fetch(gateway.http('/metrics'), { headers })).text();
    expect(metrics).toMatch(/^gateway_connections\{protocol="echo"\} 0$/m);
    expect(gateway.app.get(ProtocolRegistry).names()).toEqual(['llm', 'xiaozhi', 'mcp', 'litemcp', 'utcp', 'echo']);
  });

  it('is in the startup summary, after the protocols of the gateway', () => {
    const protocolLines = logged.filter((line) => /^(LLM gateway|MCP|LiteMCP|UTCP|echo): /.test(line));
    expect(protocolLines.map((line) => line.split(':')[0])).toEqual(['LLM gateway', 'MCP', 'LiteMCP', 'UTCP', 'echo']);
    expect(protocolLines).toContain(`echo: ${gateway.ws('/echo')}`);
  });

  it('is one of the protocols a tokens file may name: naming one nobody serves stops the boot', async () => {
    writeFileSync(join(dir, 'unknown.yaml'), 'tokens: [{name: ftp, token: ftp-secret, protocols: [ftp]}]', { mode: 0o600 });
    await expect(startGateway({ AUTH_TOKENS_FILE: join(dir, 'unknown.yaml') }, [EchoModule])).rejects.toThrow(
      /tokens\[0\] "ftp": protocols must be a list of llm, xiaozhi, mcp, litemcp, utcp, echo$/m,
    );
  });
});
