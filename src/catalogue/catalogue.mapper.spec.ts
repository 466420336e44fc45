import { toCatalogueEntry } from './catalogue.mapper';
import type { ToolDefinition } from '../core/tools/tool-definition';

describe('toCatalogueEntry', () => {
  const tool: ToolDefinition = {
    name: 'device.light.set',
    description: 'Turns a light on or off',
    inputSchema: { type: 'object', properties: { on: { type: 'boolean' } }, required: ['on'] },
    examples: [{ description: 'Lights on', arguments: { on: true } }],
    timeoutMs: 5000,
    tags: ['home'],
    source: 'module',
    handler: () => undefined,
  };

  it('lists everything but the handler', () => {
    expect(toCatalogueEntry(tool)).toEqual({
      name: 'device.light.set',
      description: 'Turns a light on or off',
      source: 'module',
      tags: ['home'],
      inputSchema: tool.inputSchema,
      examples: [{ description: 'Lights on', arguments: { on: true } }],
      timeoutMs: 5000,
    });
  });

  it('includes the output schema when the tool has one', () => {
    const outputSchema = { type: 'object', properties: { on: { type: 'boolean' } } };
    expect(toCatalogueEntry({ ...tool, outputSchema }).outputSchema).toBe(outputSchema);
  });
});
