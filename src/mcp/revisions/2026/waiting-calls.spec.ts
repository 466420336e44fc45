import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { MissingRequiredClientCapabilityError, ServerContext } from '@modelcontextprotocol/server';
import type { ToolCaller } from '../../../core/tools/tool-definition';
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

  it('ends the call with -32021 naming the capability when it asks what the client did not declare, and stops it', async () => {
    const calls = new WaitingCalls(4, new LocalWaitingCallRelay());
    const { context } = round('alice', { capabilities: {} });
    let signalOfCall: AbortSignal | undefined;
    const answer = calls.start('alice', 'ask', context, {}, (caller, signal) => {
      signalOfCall = signal;
      return askName(caller, signal);
    });
    await expect(answer).rejects.toBeInstanceOf(MissingRequiredClientCapabilityError);
    await expect(answer).rejects.toMatchObject({
      code: -32021,
      data: { requiredCapabilities: { elicitation: {} } },
      message: expect.stringContaining('did not declare the elicitation capability'),
    });
    expect(signalOfCall?.aborted).toBe(true);
  });

  it('does the same for roots, which a client that declared them is asked like any question', async () => {
    const calls = new WaitingCalls(4, new LocalWaitingCallRelay());
    const listRoots = (caller: ToolCaller, signal: AbortSignal) => caller.request!('roots/list', undefined, signal).then((roots) => ({ content: [], roots }));
    await expect(calls.start('alice', 'roots', round('alice').context, {}, listRoots)).rejects.toMatchObject({
      code: -32021,
      data: { requiredCapabilities: { roots: {} } },
    });
    const first = round('alice', { capabilities: { roots: {} } });
    const asked = await calls.start('alice', 'roots', first.context, {}, listRoots);
    expect(asked).toMatchObject({ resultType: 'input_required', inputRequests: { 'roots-1': { method: 'roots/list' } } });
    const state = await calls.verifyState((asked as { requestState: string }).requestState, first.context);
    const retry = round('alice', { state, responses: { 'roots-1': { roots: [{ uri: 'file:///home' }] } }, capabilities: { roots: {} } });
    expect(await calls.resume('alice', 'roots', retry.context, {})).toEqual({ content: [], roots: { roots: [{ uri: 'file:///home' }] } });
  });

  it("asks under the upstream's own keys when they are free in the round, else under the gateway's, and answers each its own", async () => {
    const calls = new WaitingCalls(4, new LocalWaitingCallRelay());
    const first = round('alice', { capabilities: { elicitation: {}, sampling: {} } });
    const question = (key: string | undefined, caller: ToolCaller, signal: AbortSignal, message: string) =>
      caller.request!('elicitation/create', { message, requestedSchema: { type: 'object', properties: {} } }, signal, key);
    const asked = await calls.start('alice', 'three', first.context, {}, async (caller, signal) => {
      const answers = await Promise.all([
        question('user_name', caller, signal, 'first'),
        question('user_name', caller, signal, 'second'),
        question(undefined, caller, signal, 'third'),
      ]);
      return { content: [{ type: 'text', text: JSON.stringify(answers) }] };
    });
    expect(asked).toMatchObject({
      resultType: 'input_required',
      inputRequests: {
        user_name: { params: { message: 'first' } },
        'elicitation-1': { params: { message: 'second' } },
        'elicitation-2': { params: { message: 'third' } },
      },
    });
    const state = await calls.verifyState((asked as { requestState: string }).requestState, first.context);
    const answer = (name: string) => ({ action: 'accept', content: { name } });
    const retry = round('alice', { state, responses: { 'elicitation-2': answer('c'), user_name: answer('a'), 'elicitation-1': answer('b') } });
    const result = (await calls.resume('alice', 'three', retry.context, {})) as CallToolResult;
    expect(JSON.parse((result.content[0] as { text: string }).text)).toEqual([answer('a'), answer('b'), answer('c')]);
  });

  it('tells the upstream what the client declared, and hands it the answers the first request carried unasked, once', async () => {
    const calls = new WaitingCalls(4, new LocalWaitingCallRelay());
    const { context } = round('alice', { capabilities: { sampling: {} }, responses: { user_name: { action: 'decline' } } });
    const seen = await calls.start('alice', 'told', context, {}, async (caller) => {
      const told = { declared: caller.declaredCapabilities?.(), first: caller.takeUnaskedAnswers?.(), second: caller.takeUnaskedAnswers?.() };
      return { content: [{ type: 'text', text: JSON.stringify(told) }] };
    });
    expect(JSON.parse(((seen as CallToolResult).content[0] as { text: string }).text)).toEqual({
      declared: { sampling: {} },
      first: { user_name: { action: 'decline' } },
    });
  });
});
