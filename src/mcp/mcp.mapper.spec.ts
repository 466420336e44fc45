import { CallToolResultSchema, ToolSchema } from '@modelcontextprotocol/sdk/types.js';
import type { ToolContentBlock, ToolOutcome } from '../core/tools/tool-definition';
import { defineTool } from '../../test/support/define-tool';
import { toCallToolResult, toMcpTool } from './mcp.mapper';

const clock = defineTool({
  name: 'clock',
  description: 'Tells the time',
  inputSchema: { type: 'object', properties: { zone: { type: 'string' } }, additionalProperties: false },
  outputSchema: { type: 'object', properties: { iso: { type: 'string' } }, required: ['iso'] },
  examples: [{ description: 'What time is it?', arguments: {} }],
  tags: ['time'],
});
const adder = defineTool({ name: 'adder', outputSchema: { type: 'number' } });
const ok = (value: unknown, content?: ToolContentBlock[]): ToolOutcome => ({ ok: true, value, content, durationMs: 1 });

describe('MCP mapping', () => {
  describe('toMcpTool', () => {
    it('lists name, description, input schema and an object output schema', () => {
      const tool = toMcpTool(clock);
      expect(tool).toEqual({
        name: 'clock',
        description: 'Tells the time',
        inputSchema: { type: 'object', properties: { zone: { type: 'string' } }, additionalProperties: false },
        outputSchema: { type: 'object', properties: { iso: { type: 'string' } }, required: ['iso'] },
      });
      expect(ToolSchema.safeParse(tool).success).toBe(true);
    });

    it("lists a tool's title, annotations and icons, which MCP's Tool takes", () => {
      const presentation = { title: 'Clock', annotations: { readOnlyHint: true }, icons: [{ src: 'https://example.com/clock.png', mimeType: 'image/png' }] };
      const tool = toMcpTool({ ...clock, presentation });
      expect(tool).toMatchObject({ name: 'clock', ...presentation });
      expect(ToolSchema.safeParse(tool).success).toBe(true);
    });

    it('leaves out an output schema that is not an object schema, which MCP cannot take', () => {
      expect(toMcpTool(adder)).not.toHaveProperty('outputSchema');
    });

    it('says type "object" even when the input schema leaves the type out', () => {
      const untyped = toMcpTool(defineTool({ inputSchema: { properties: { a: { type: 'number' } } } }));
      expect(untyped.inputSchema).toEqual({ type: 'object', properties: { a: { type: 'number' } } });
      expect(ToolSchema.safeParse(untyped).success).toBe(true);
    });
  });

  describe('toCallToolResult', () => {
    it.each([
      ['a number', 5, [{ type: 'text', text: '5' }]],
      ['a string, as it is', 'hello', [{ type: 'text', text: 'hello' }]],
      ['a boolean', false, [{ type: 'text', text: 'false' }]],
      ['an array, as JSON text', [1, 'a'], [{ type: 'text', text: '[1,"a"]' }]],
      ['an object, as JSON text', { a: 1 }, [{ type: 'text', text: '{"a":1}' }]],
      ['nothing', undefined, []],
      ['null', null, []],
    ])('turns %s into text content', (_name, value, content) => {
      const result = toCallToolResult(adder, ok(value));
      expect(result).toEqual({ content });
      expect(CallToolResultSchema.safeParse(result).success).toBe(true);
    });

    it('adds structuredContent for a tool with an object output schema', () => {
      expect(toCallToolResult(clock, ok({ iso: '2025-01-01T00:00:00Z' }))).toEqual({
        content: [{ type: 'text', text: '{"iso":"2025-01-01T00:00:00Z"}' }],
        structuredContent: { iso: '2025-01-01T00:00:00Z' },
      });
    });

    it.each([
      ['a string', 'noon'],
      ['an array', [1]],
      ['nothing', undefined],
    ])('reports %s from a tool whose output schema wants an object as a failure', (_name, value) => {
      const result = toCallToolResult(clock, ok(value));
      expect(result.isError).toBe(true);
      expect(result.content).toEqual([{ type: 'text', text: expect.stringMatching(/^Tool "clock" returned .*, not the object its output schema describes$/) }]);
    });

    it('passes content blocks the tool produced itself through', () => {
      const blocks = [
        { type: 'text', text: 'a chart' },
        { type: 'image', data: 'aGk=', mimeType: 'image/png' },
      ];
      expect(toCallToolResult(adder, ok(7, blocks))).toEqual({ content: blocks });
    });

    it('reports a failed call as isError with its message as text', () => {
      const result = toCallToolResult(adder, { ok: false, code: 'TOOL_TIMEOUT', message: 'Tool "adder" did not finish within 1 s', durationMs: 1000 });
      expect(result).toEqual({ content: [{ type: 'text', text: 'Tool "adder" did not finish within 1 s' }], isError: true });
      expect(CallToolResultSchema.safeParse(result).success).toBe(true);
    });
  });
});
