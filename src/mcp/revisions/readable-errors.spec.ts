import { describeIssues, readableError, withReadableErrors } from './readable-errors';

/** A zod error's message as both MCP SDKs build it: the issues, JSON with two-space indents. */
const dump = (issues: unknown[]) => JSON.stringify(issues, null, 2);

const NAME_MISSING = { expected: 'string', code: 'invalid_type', path: ['params', 'name'], message: 'Invalid input: expected string, received undefined' };
const ARGUMENTS_ARRAY = { expected: 'record', code: 'invalid_type', path: ['params', 'arguments'], message: 'Invalid input: expected record, received array' };

describe('readableError', () => {
  it('makes the SDK 1.x tools/call dump one sentence per problem, keeping its code and words before it', () => {
    const error = { code: -32602, message: `MCP error -32602: Invalid tools/call request: ${dump([NAME_MISSING, ARGUMENTS_ARRAY])}` };
    expect(readableError(error)).toEqual({
      code: -32602,
      message: 'MCP error -32602: Invalid tools/call request: name is required; arguments must be an object',
    });
  });

  it('answers a bare dump of the params, sent as -32603, as -32602 Invalid params', () => {
    const level = {
      code: 'invalid_value',
      values: ['debug', 'info', 'notice'],
      path: ['params', 'level'],
      message: 'Invalid option: expected one of "debug"|"info"|"notice"',
    };
    expect(readableError({ code: -32603, message: dump([level]), data: { kept: true } })).toEqual({
      code: -32602,
      message: 'Invalid params: level must be one of: "debug", "info", "notice"',
      data: { kept: true },
    });
  });

  it('keeps the code of a bare dump about something other than the params', () => {
    const issue = { expected: 'array', code: 'invalid_type', path: ['content'], message: 'Invalid input: expected array, received string' };
    expect(readableError({ code: -32603, message: dump([issue]) })).toEqual({ code: -32603, message: 'Invalid message: content must be an array' });
  });

  it.each([
    ['a number', { code: 'too_big', origin: 'number', maximum: 10, inclusive: true, path: ['params', 'count'] }, 'count must be at most 10'],
    ['an exclusive bound', { code: 'too_small', origin: 'number', minimum: 0, inclusive: false, path: ['params', 'ttl'] }, 'ttl must be more than 0'],
    ['a string', { code: 'too_big', origin: 'string', maximum: 64, inclusive: true, path: ['params', 'name'] }, 'name must be at most 64 characters long'],
    ['an empty string', { code: 'too_small', origin: 'string', minimum: 1, inclusive: true, path: ['params', 'uri'] }, 'uri must not be empty'],
    ['an array', { code: 'too_small', origin: 'array', minimum: 1, inclusive: true, path: ['params', 'ids'] }, 'ids must hold at least 1 item'],
    ['a literal', { code: 'invalid_value', values: ['ref/prompt'], path: ['params', 'ref', 'type'] }, 'ref.type must be "ref/prompt"'],
    ['a union', { code: 'invalid_union', errors: [[], []], path: ['params', 'ref'], message: 'Invalid input' }, 'ref matches none of the forms it may take'],
    ['unknown keys', { code: 'unrecognized_keys', keys: ['a', 'b'], path: ['params'] }, 'params has keys it does not take: a, b'],
    ['a format', { code: 'invalid_format', format: 'url', path: ['params', 'uri'] }, 'uri must be a valid url'],
    [
      'an integer',
      { code: 'invalid_type', expected: 'int', path: ['params', 'n'], message: 'Invalid input: expected int, received number' },
      'n must be an integer',
    ],
    ['anything else', { code: 'custom', path: ['params', 'x'], message: 'Invalid input: bad x' }, 'x is invalid: bad x'],
  ])('words %s as one sentence', (_name, issue, sentence) => {
    expect(readableError({ code: -32602, message: `Invalid tools/call request: ${dump([issue])}` }).message).toBe(`Invalid tools/call request: ${sentence}`);
  });

  it('bounds what it says: a few problems, and short quotes of what the client named', () => {
    const issues = Array.from({ length: 500 }, (_, index) => ({ ...NAME_MISSING, path: ['params', 'arguments', `k${index}${'x'.repeat(200)}`] }));
    const { message } = readableError({ code: -32602, message: `Invalid prompts/get request: ${dump(issues)}` });
    expect(message).toMatch(/; and 490 more$/);
    expect(message.length).toBeLessThan(1_500);
    expect(message).not.toContain('\n');
  });

  it.each([
    ['a message without a dump', 'Unknown tool "x"'],
    ['a message ending in a bracket that is not JSON', 'Invalid thing: [\n oops\n]'],
    ['JSON that is not a list of issues', `Invalid thing: ${dump([{ no: 'path' }])}`],
    ['an empty list', 'Invalid thing: [\n]'],
  ])('leaves %s as it is', (_name, message) => {
    const error = { code: -32602, message };
    expect(readableError(error)).toBe(error);
  });
});

describe('describeIssues', () => {
  it('names the whole by the word given when an issue has no path', () => {
    expect(
      describeIssues([{ code: 'invalid_type', expected: 'object', path: [], message: 'Invalid input: expected object, received string' }], 'the answer'),
    ).toBe('the answer must be an object');
  });
});

describe('withReadableErrors', () => {
  it('rewrites the errors a transport sends, and passes every other message as it is', async () => {
    const sent: unknown[] = [];
    const transport = withReadableErrors({ send: async (message: unknown, options?: unknown) => void sent.push([message, options]) });
    const result = { jsonrpc: '2.0', id: 1, result: {} };
    await transport.send(result as never, { relatedRequestId: 1 } as never);
    await transport.send({ jsonrpc: '2.0', id: 2, error: { code: -32603, message: dump([NAME_MISSING]) } } as never);
    expect(sent).toEqual([
      [result, { relatedRequestId: 1 }],
      [{ jsonrpc: '2.0', id: 2, error: { code: -32602, message: 'Invalid params: name is required' } }, undefined],
    ]);
    expect(sent[0]).toEqual([result, { relatedRequestId: 1 }]);
    expect((sent[0] as unknown[])[0]).toBe(result);
  });
});
