import { TestToolsModule } from '../support/test-tools';
import { CalculatorModule } from '../../src/examples/calculator/calculator.module';
import { LlmStack, startLlmStack } from '../support/llm-stack';
import { ConnectionRegistry } from '../../src/core/ws/connection-registry';
import { MAX_WAITING_CALLS } from '../../src/utcp/utcp-tool.gateway';
import { TestSocket } from '../support/test-socket';

const MCP_TOKEN = 'flood-mcp-token';

/** Reads `count` frames, parsed; fails if one takes over `timeoutMs`. */
async function read(socket: TestSocket, count: number, timeoutMs = 10_000): Promise<any[]> {
  const frames: any[] = [];
  for (let index = 0; index < count; index += 1) frames.push(await socket.next(timeoutMs));
  return frames;
}

/** Sends every frame in one go, without waiting for any answer. */
function flood(socket: TestSocket, frames: unknown[]): void {
  for (const frame of frames) socket.send(frame);
}

/**
 * Thousands of frames sent as fast as a client can write them, on every protocol: each is
 * answered, in order where the protocol pairs answers by order (and by id otherwise), the
 * gateway stays up, and what it bounds (requests waiting on a connection) it refuses in the
 * protocol's words instead of holding without limit.
 */
describe('probing: floods of frames on every protocol', () => {
  let stack: LlmStack;

  beforeAll(async () => {
    stack = await startLlmStack({ MCP_WS_AUTH_TOKEN: MCP_TOKEN }, [CalculatorModule, TestToolsModule]);
  });
  afterAll(() => stack.close());

  it('LLM gateway: 5,000 pings get 5,000 pongs; 40 turns at once get 8 waiting places and a refusal each for the rest', async () => {
    const client = await stack.connect();
    flood(client, Array(5_000).fill({ type: 'ping' }));
    expect((await read(client, 5_000)).every((frame) => frame.type === 'pong')).toBe(true);

    stack.llm.reply(...Array(40).fill({ text: 'Fine.', delayMs: 20 }));
    flood(
      client,
      Array.from({ length: 40 }, (_, index) => ({ type: 'text_input', text: `turn ${index}`, turn_id: `t${index}` })),
    );
    const frames: any[] = [];
    // One running and eight waiting are answered (processing, answer, idle each); the other 31 are refused at once.
    while (frames.filter((frame) => frame.type === 'status' && frame.status === 'idle').length < 9) frames.push(await client.next(10_000));
    const refused = frames.filter((frame) => frame.type === 'error');
    expect(refused).toHaveLength(31);
    expect(refused.every((frame) => frame.code === 'INVALID_MESSAGE' && /Too many requests waiting: at most 8/.test(frame.message))).toBe(true);
    const answered = frames.filter((frame) => frame.type === 'llm_response').map((frame) => frame.turn_id);
    expect(answered).toEqual(Array.from({ length: 9 }, (_, index) => `t${index}`));
    await client.expectSilence(100);
    stack.llm.reset();
    await client.close();
  });

  it('LiteMCP: 5,000 calls are answered, each under its own id, in order', async () => {
    const socket = await TestSocket.open(stack.gateway.ws('/litemcp/calculator'));
    flood(
      socket,
      Array.from({ length: 5_000 }, (_, id) => ({ version: [1, 0, 0], id, type: 'call', data: { tool: 'calculator', arguments: [String(id), '1'] } })),
    );
    const answers = await read(socket, 5_000);
    expect(answers.map((answer) => answer.id)).toEqual(Array.from({ length: 5_000 }, (_, id) => id));
    expect(answers.every((answer, id) => answer.data.response.content[0].data === String(id + 1))).toBe(true);
    await socket.close();
  });

  it('UTCP /utcp: 5,000 calls are answered, each under its own id', async () => {
    const socket = await TestSocket.open(stack.gateway.ws('/utcp'));
    flood(
      socket,
      Array.from({ length: 5_000 }, (_, id) => ({ type: 'call', id, tool: 'calculator', params: { a: id, b: 1 } })),
    );
    const answers = await read(socket, 5_000);
    expect(answers.every((answer) => answer.type === 'result' && answer.result === answer.id + 1)).toBe(true);
    expect(new Set(answers.map((answer) => answer.id)).size).toBe(5_000);
    await socket.close();
  });

  it('UTCP /utcp/calculator: 5,000 calls, which carry no id, are answered in the order they came', async () => {
    const socket = await TestSocket.open(stack.gateway.ws('/utcp/calculator'));
    flood(
      socket,
      Array.from({ length: 5_000 }, (_, index) => ({ a: index, b: 1 })),
    );
    expect(await read(socket, 5_000)).toEqual(Array.from({ length: 5_000 }, (_, index) => index + 1));
    await socket.close();
  });

  it('UTCP /utcp/<slow tool>: a client that sends calls far faster than they end is held back, not queued without bound, and answered in order', async () => {
    const socket = await TestSocket.open(stack.gateway.ws('/utcp/test.wait'));
    const [connection] = stack.gateway.app.get(ConnectionRegistry).list('utcp');
    // 200 calls of 20 ms carrying 100 KB each: 20 MB that the gateway must not take in at once.
    const padding = 'p'.repeat(100_000);
    flood(
      socket,
      Array.from({ length: 200 }, (_, index) => ({ ms: 20, padding, index })),
    );
    let mostWaiting = 0;
    const answers: any[] = [];
    while (answers.length < 200) {
      mostWaiting = Math.max(mostWaiting, connection.queue().size);
      answers.push(await socket.next(10_000));
    }
    expect(answers).toEqual(Array(200).fill({ waited_ms: 20 }));
    // The limit, and what was already read when the gateway stopped reading.
    expect(mostWaiting).toBeLessThanOrEqual(MAX_WAITING_CALLS + 8);
    await socket.close();
  });

  it('MCP plain: 3,000 requests are answered, each under its own id', async () => {
    const socket = await TestSocket.open(stack.gateway.ws('/mcp'), { headers: { Authorization: `Bearer ${MCP_TOKEN}` }, protocols: ['mcp'] });
    flood(
      socket,
      Array.from({ length: 3_000 }, (_, id) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'calculator', arguments: { a: id, b: 1 } } })),
    );
    const answers = await read(socket, 3_000);
    expect(answers.every((answer) => answer.result?.content?.[0]?.text === String(answer.id + 1))).toBe(true);
    expect(new Set(answers.map((answer) => answer.id)).size).toBe(3_000);
    await socket.close();
  });

  it('the gateway still serves a newcomer after the floods', async () => {
    const client = await stack.connect();
    client.send({ type: 'text_input', text: 'still there?' });
    expect((await client.until('llm_response')).pop()).toMatchObject({ content: 'You said: still there?' });
    await client.close();
  });
});
