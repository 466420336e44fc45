import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ServerContext } from '@modelcontextprotocol/server';
import type { ToolCaller } from '../../core/tools/tool-definition';
import { LocalWaitingCallRelay } from './waiting-call-relay';
import { WaitingCalls } from './waiting-calls';

const CAPABILITIES_KEY = 'io.modelcontextprotocol/clientCapabilities';

/** The SDK's context of one round by `principal`, as the seam hands it to a handler after verifying `state`. */
function round(principal: string, options: { state?: unknown; responses?: Record<string, unknown>; capabilities?: Record<string, unknown> } = {}) {
  const aborted = new AbortController();
  const context = {
    mcpReq: {
      method: 'tools/call',
      signal: aborted.signal,
      envelope: { [CAPABILITIES_KEY]: options.capabilities ?? { elicitation: {} } },
      inputResponses: options.responses,
      requestState: () => options.state,
    },
    http: { authInfo: { extra: { principal } } },
  } as unknown as ServerContext;
  return { context, leave: () => aborted.abort() };
}

const askName = (caller: ToolCaller, signal: AbortSignal): Promise<CallToolResult> =>
  caller.request!('elicitation/create', { message: 'Name?', requestedSchema: { type: 'object', properties: {} } }, signal).then((answer) => ({
    content: [{ type: 'text', text: JSON.stringify(answer) }],
  }));

describe('WaitingCalls', () => {
  it('keeps a call that asked between rounds, and hands it the answer of the retry', async () => {
    const calls = new WaitingCalls(4, new LocalWaitingCallRelay());
    const first = round('alice');
    const asked = await calls.start('alice', 'ask', first.context, {}, askName);
    expect(asked).toMatchObject({ resultType: 'input_required', inputRequests: { 'elicitation-1': { method: 'elicitation/create' } } });
    const state = await calls.verifyState((asked as { requestState: string }).requestState, first.context);
    const retry = round('alice', { state, responses: { 'elicitation-1': { action: 'decline' } } });
    expect(await calls.resume('alice', 'ask', retry.context, {})).toEqual({ content: [{ type: 'text', text: '{"action":"decline"}' }] });
  });

  it("refuses a question beyond the principal's bound of waiting calls, and no other principal's", async () => {
    const calls = new WaitingCalls(2, new LocalWaitingCallRelay());
    for (let i = 0; i < 2; i++) expect(await calls.start('alice', 'ask', round('alice').context, {}, askName)).toMatchObject({ resultType: 'input_required' });
    await expect(calls.start('alice', 'ask', round('alice').context, {}, askName)).rejects.toThrow('too many calls of this client wait for input');
    expect(await calls.start('bob', 'ask', round('bob').context, {}, askName)).toMatchObject({ resultType: 'input_required' });
  });

  it('ends the call when the client of a round goes away, and withdraws its question', async () => {
    const calls = new WaitingCalls(4, new LocalWaitingCallRelay());
    const { context, leave } = round('alice');
    let signalOfCall: AbortSignal | undefined;
    const answer = calls.start('alice', 'slow', context, {}, (_caller, signal) => {
      signalOfCall = signal;
      return new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
    });
    leave();
    await expect(answer).rejects.toThrow('The client went away');
    expect(signalOfCall?.aborted).toBe(true);
  });

  it('refuses a question the client cannot answer, with the capability it lacks', async () => {
    const calls = new WaitingCalls(4, new LocalWaitingCallRelay());
    const { context } = round('alice', { capabilities: {} });
    await expect(calls.start('alice', 'ask', context, {}, askName)).rejects.toThrow('did not declare the elicitation capability');
  });
});
