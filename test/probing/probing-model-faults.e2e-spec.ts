import { LLM_PROTOCOL } from '../../src/llm-gateway/llm-gateway.gateway';
import type { LlmConnection } from '../../src/llm-gateway/llm-connection';
import { ConnectionRegistry } from '../../src/core/ws/connection-registry';
import { LlmClient, LlmStack, startLlmStack } from '../support/llm-stack';
import { LogCapture, NESTED, nestedJson } from '../support/probing';
import { ScriptedFault } from '../support/scripted-llm';

/**
 * A model server that fails in every way we could script: each turn ends with the LLM
 * gateway's error frame (LLM_ERROR, or TIMEOUT for a model that goes quiet), saying what kind of
 * failure it was and nothing the server said, then `idle`; the next turn on the same connection
 * is answered; nothing of the failed turn is left behind.
 */
describe('probing: model faults', () => {
  let stack: LlmStack;
  let client: LlmClient;
  const log = new LogCapture();

  beforeAll(async () => {
    stack = await startLlmStack({ LLM_TIMEOUT: 1, CLOUD_LOG_LEVEL: 'WARN' });
    client = await stack.connect();
    log.start();
  });
  afterAll(async () => {
    log.stop();
    await client.close();
    await stack.close();
  });
  beforeEach(() => stack.llm.reset());

  /** One turn: its frames up to `idle`, which must include `error` with `code` (and no frame after `idle`). */
  async function failedTurn(code: string): Promise<any> {
    client.send({ type: 'text_input', text: 'are you there?' });
    const frames = await client.until('status', 'idle');
    const error = frames.find((frame) => frame.type === 'error');
    expect(error).toMatchObject({ code, message: expect.any(String), details: expect.any(String) });
    expect(frames.some((frame) => frame.type === 'llm_response' && frame.is_final)).toBe(false);
    expect(JSON.stringify(error)).not.toMatch(/sk-secret|CUDA|Bad Gateway|at .+\.js:\d+/);
    return error;
  }

  /** The next turn works: the model (echoing now) answers it. */
  async function answeredTurn(): Promise<void> {
    client.send({ type: 'text_input', text: 'and now?' });
    expect((await client.until('llm_response')).pop()).toMatchObject({ content: 'You said: and now?', is_final: true });
    expect(await client.next()).toMatchObject({ type: 'status', status: 'idle' });
  }

  const FAULTS: [ScriptedFault, string, RegExp][] = [
    ['http500', 'LLM_ERROR', /answered HTTP 500/],
    ['http404', 'LLM_ERROR', /answered HTTP 404/],
    ['cut', 'LLM_ERROR', /could not be read: the stream broke off/],
    ['badJson', 'LLM_ERROR', /could not be read: it was not valid JSON/],
    ['garbage', 'LLM_ERROR', /not an event stream/],
    ['errorEvent', 'LLM_ERROR', /reported an error in the middle of its answer/],
    ['hang', 'TIMEOUT', /did not answer within 1 s/],
    ['stall', 'TIMEOUT', /did not answer within 1 s/],
  ];

  it.each(FAULTS)('a model server that fails with %s: %s, then the next turn is answered', async (fault, code, details) => {
    stack.llm.reply({ fault });
    const error = await failedTurn(code);
    expect(error.details).toMatch(details);
    await answeredTurn();
  });

  it('a streaming turn cut mid-answer: LLM_ERROR, and the next turn streams its sentences', async () => {
    client.send({ type: 'configure', stream: true });
    try {
      stack.llm.reply({ fault: 'cut' });
      await failedTurn('LLM_ERROR');
      stack.llm.reply({ text: 'First sentence here. Second one follows.' });
      client.send({ type: 'text_input', text: 'again' });
      const frames = await client.until('status', 'idle');
      const partials = frames.filter((frame) => frame.type === 'llm_response' && !frame.is_final);
      expect(partials.map((frame) => frame.content).join('')).toBe('First sentence here. Second one follows.');
      expect(frames.find((frame) => frame.is_final)).toMatchObject({ content: 'First sentence here. Second one follows.' });
    } finally {
      client.send({ type: 'configure', stream: false });
    }
  });

  it('a model server that refuses connections: LLM_ERROR naming no credentials, then answered once it is back', async () => {
    await stack.llm.close();
    try {
      expect((await failedTurn('LLM_ERROR')).details).toMatch(/could not be reached/);
    } finally {
      await stack.llm.resume();
    }
    await answeredTurn();
  });

  it('tool arguments nested 20,000 deep from the model: the call fails as INVALID_TOOL_PARAMETERS and the turn is answered', async () => {
    stack.llm.reply({ toolCalls: [{ name: 'calculator', arguments: nestedJson({ a: NESTED, b: 1 }, 20_000) }] }, { text: 'I could not calculate that.' });
    client.send({ type: 'text_input', text: 'add these' });
    const frames = await client.until('llm_response');
    expect(frames.find((frame) => frame.type === 'tool_call')).toMatchObject({
      tool_name: 'calculator',
      success: false,
      result: { error: { code: 'INVALID_TOOL_PARAMETERS', message: 'Arguments for "calculator" nest deeper than 64 levels' } },
    });
    expect(frames.pop()).toMatchObject({ content: 'I could not calculate that.', is_final: true });
    await client.until('status', 'idle');
  });

  it('leaves no turn, pending tool call or stack trace behind', () => {
    const [connection] = stack.gateway.app.get(ConnectionRegistry).list(LLM_PROTOCOL) as LlmConnection[];
    expect(connection.state.turns.size).toBe(0);
    expect(connection.state.callbacks.size).toBe(0);
    expect(log.stackTraces()).toEqual([]);
    // The operator's log has the model server's words (clients never do); what it must not have is a fault of ours.
    expect(log.output).not.toMatch(/Internal error|INTERNAL_ERROR/);
  });
});
