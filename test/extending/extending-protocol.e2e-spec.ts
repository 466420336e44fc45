import { Logger, Module } from '@nestjs/common';
import { BearerAuthGuard } from '../../src/core/auth/bearer-auth.guard';
import { describeException } from '../../src/core/errors/describe-exception';
import { GatewayError, GatewayErrorCode } from '../../src/core/errors/gateway-error';
import { thenMaybe } from '../../src/core/maybe-promise';
import { ToolCallScope } from '../../src/core/tools/tool-call-scope';
import { ToolCallService } from '../../src/core/tools/tool-call.service';
import type { FrameConnection, GatewayConnection } from '../../src/core/ws/connection';
import { ConnectionRegistry } from '../../src/core/ws/connection-registry';
import { OnFrame } from '../../src/core/ws/on-frame.decorator';
import { ProtocolGateway, ProtocolGatewayHooks } from '../../src/core/ws/protocol-gateway.decorator';
import { CalculatorModule } from '../../src/examples/calculator/calculator.module';
import { RunningGateway, startGateway } from '../support/gateway';
import { eventually } from '../support/probing';
import { TestSocket, UpgradeRefused } from '../support/test-socket';

/**
 * A fifth protocol, written by following docs/architecture.md ("Adding a protocol") alone: a
 * gateway class on a route, a schema per frame, a handler per frame, errors in its own words,
 * tool calls through the core. Everything the route decides (auth at the upgrade, the
 * connection cap, the keep-alive, frames checked and refused) it gets without code of its own.
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

describe('a protocol added by copying the pattern', () => {
  let gateway: RunningGateway;
  const headers = { Authorization: 'Bearer echo-token' };

  beforeAll(async () => {
    gateway = await startGateway({ AUTH_TOKENS: 'echo-token', CLOUD_PING_INTERVAL: 0.05, CLOUD_PING_TIMEOUT: 0.3 }, [CalculatorModule, EchoModule]);
  });
  afterAll(() => gateway.close());

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
});
