import { defineTool } from '../../test/support/define-tool';
import { coerceArguments, toCallResult, toLiteMcpTool } from './litemcp.mapper';

const calculator = defineTool({
  name: 'calculator',
  description: 'A simple calculator',
  inputSchema: {
    type: 'object',
    properties: {
      a: { type: 'number', description: 'The first number', examples: [2] },
      b: { type: 'number', description: 'The second number' },
      operation: { type: 'string', enum: ['add', 'divide'], default: 'add' },
    },
    required: ['a', 'b'],
  },
  examples: [{ description: 'Calculate the sum of 2 and 3', arguments: { a: 2, b: 3 } }],
});

describe('LiteMCP mapping', () => {
  it('describes a tool with its parameters in schema order', () => {
    expect(toLiteMcpTool(calculator)).toEqual({
      version: [1, 0, 0],
      name: 'calculator',
      description: 'A simple calculator',
      example: 'Calculate the sum of 2 and 3',
      parameters: [
        { name: 'a', type: 'number', description: 'The first number.', example: '2' },
        { name: 'b', type: 'number', description: 'The second number.', example: '3' },
        { name: 'operation', type: 'string', description: 'One of: add, divide. Optional, default add.', example: 'add' },
      ],
    });
  });

  it('labels union, enum-only and untyped properties', () => {
    const tool = defineTool({
      inputSchema: {
        type: 'object',
        properties: { u: { type: ['integer', 'null'] }, e: { enum: [1, 2] }, any: {} },
      },
    });
    expect(toLiteMcpTool(tool).parameters!.map((p) => p.type)).toEqual(['integer', 'number', 'string']);
  });

  describe('coerceArguments', () => {
    const typed = defineTool({
      inputSchema: {
        type: 'object',
        properties: {
          n: { type: 'number' },
          i: { type: 'integer' },
          b: { type: 'boolean' },
          o: { type: 'object' },
          a: { type: 'array' },
          s: { type: 'string' },
          u: { type: ['string', 'number'] },
        },
      },
    });

    it("reads each positional string as its property's type", () => {
      expect(coerceArguments(typed, ['2.5', '3', 'TRUE', '{"x":1}', '[1,2]', '007', '5'])).toEqual({
        ok: true,
        args: { n: 2.5, i: 3, b: true, o: { x: 1 }, a: [1, 2], s: '007', u: 5 },
        params: { n: '2.5', i: '3', b: 'TRUE', o: '{"x":1}', a: '[1,2]', s: '007', u: '5' },
      });
    });

    it('treats an empty string for a non-string parameter as not given', () => {
      expect(coerceArguments(typed, ['', '1'])).toMatchObject({ ok: true, args: { i: 1 } });
      expect(coerceArguments(typed, ['', '', '', '', '', ''])).toMatchObject({ ok: true, args: { s: '' } });
    });

    it.each([
      [['abc'], /Argument "n" must be number, got "abc"/],
      [['1', '1.5'], /Argument "i" must be integer/],
      [['1', '1', 'yes'], /Argument "b" must be boolean/],
      [['1', '1', 'true', '[1]'], /Argument "o" must be object/],
      [['1', '1', 'true', '{}', '{}'], /Argument "a" must be array/],
      [['Infinity'], /must be number/],
    ])('refuses %o', (values, problem) => {
      const result = coerceArguments(typed, values);
      expect(result.ok).toBe(false);
      expect(!result.ok && result.problem).toMatch(problem);
    });

    it('refuses more arguments than parameters, naming them', () => {
      const result = coerceArguments(calculator, ['1', '2', 'add', 'extra']);
      expect(!result.ok && result.problem).toBe('Tool "calculator" takes at most 3 argument(s) (a, b, operation), got 4');
      expect(result.params).toEqual({ a: '1', b: '2', operation: 'add' });
    });
  });

  describe('toCallResult', () => {
    const ok = (value: unknown) => toCallResult({ a: '1' }, { ok: true, value, durationMs: 1 }).response;

    it('turns values into content strings', () => {
      expect(ok(5)).toEqual({ content: [{ type: 'number', data: '5' }], error: false });
      expect(ok('hi')).toEqual({ content: [{ type: 'text', data: 'hi' }], error: false });
      expect(ok(true)).toEqual({ content: [{ type: 'boolean', data: 'true' }], error: false });
      expect(ok({ t: 1 })).toEqual({ content: [{ type: 'json', data: '{"t":1}' }], error: false });
      expect(ok(null)).toEqual({ content: [], error: false });
    });

    it('keeps content blocks a tool produced itself', () => {
      const result = toCallResult(
        {},
        {
          ok: true,
          value: undefined,
          content: [
            { type: 'text', text: 'hi' },
            { type: 'image', data: 'AAAA', mimeType: 'image/png' },
            { type: 'resource_link', uri: 'file:///x' },
          ],
          durationMs: 1,
        },
      );
      expect(result.response.content).toEqual([
        { type: 'text', data: 'hi' },
        { type: 'image/png', data: 'AAAA' },
        { type: 'resource_link', data: '{"type":"resource_link","uri":"file:///x"}' },
      ]);
    });

    it('marks failures and carries the message as text', () => {
      expect(toCallResult({ a: '1' }, { ok: false, code: 'TOOL_EXECUTION_FAILED', message: 'Division by zero', durationMs: 1 })).toEqual({
        version: [1, 0, 0],
        params: { a: '1' },
        response: { content: [{ type: 'text', data: 'Division by zero' }], error: true },
      });
    });
  });
});
