import { loadGatewayConfig } from '../config/gateway-config';
import { ToolRegistryService } from '../core/tools/tool-registry.service';
import { errorText, isSameTool, planTools, toContentResult } from './upstream.mapper';

describe('upstream tools in the catalogue', () => {
  const sum = {
    name: 'get-sum',
    description: 'Adds',
    inputSchema: { type: 'object' as const, properties: { a: { type: 'number' } } },
    outputSchema: { type: 'object' as const, properties: { sum: { type: 'number' } } },
  };

  it('plans each tool with its valid name, upstream name, schemas and a description', () => {
    expect(planTools('math.', [sum, { name: 'nameless', title: 'Has only a title', inputSchema: { type: 'object' } }])).toEqual([
      { upstreamName: 'get-sum', name: 'math.get_sum', description: 'Adds', inputSchema: sum.inputSchema, outputSchema: sum.outputSchema },
      {
        upstreamName: 'nameless',
        name: 'math.nameless',
        description: 'Has only a title',
        inputSchema: { type: 'object' },
        presentation: { title: 'Has only a title' },
      },
    ]);
  });

  it('plans tools that run only as MCP tasks as long ones to call as tasks', () => {
    expect(planTools('', [{ name: 'batch', inputSchema: { type: 'object' }, execution: { taskSupport: 'required' } }])).toEqual([
      { upstreamName: 'batch', name: 'batch', description: '', inputSchema: { type: 'object' }, longRunning: true, taskRequired: true },
    ]);
  });

  it('knows when a listed tool is already in the catalogue as it is', () => {
    const registry = new ToolRegistryService(loadGatewayConfig({}));
    const [planned] = planTools('math.', [sum]);
    const tool = registry.register({ ...planned, timeoutMs: 5000, source: 'mcp:math', handler: () => 0 });
    expect(isSameTool(tool, planned, 5000)).toBe(true);
    expect(isSameTool(tool, planned, 6000)).toBe(false);
    expect(isSameTool(tool, { ...planned, description: 'Sums' }, 5000)).toBe(false);
    expect(isSameTool(tool, { ...planned, inputSchema: { type: 'object' } }, 5000)).toBe(false);
    expect(isSameTool(tool, { ...planned, presentation: { title: 'Sum' } }, 5000)).toBe(false);
    registry.onModuleDestroy();
  });

  it("keeps a tool's title, annotations and icons as the upstream sent them", () => {
    const presented = { ...sum, title: 'Sum', annotations: { readOnlyHint: true }, icons: [{ src: 'data:image/png;base64,AA==' }] };
    expect(planTools('math.', [presented])[0].presentation).toEqual({
      title: 'Sum',
      annotations: { readOnlyHint: true },
      icons: [{ src: 'data:image/png;base64,AA==' }],
    });
    expect(planTools('math.', [sum])[0].presentation).toBeUndefined();
  });

  it("keeps a result's blocks and structured content, and reads a failure's text", () => {
    const result = toContentResult({ content: [{ type: 'text', text: '{"sum":3}' }], structuredContent: { sum: 3 } });
    expect(result).toMatchObject({ content: [{ type: 'text', text: '{"sum":3}' }], structuredContent: { sum: 3 } });
    expect(errorText({ content: [{ type: 'text', text: 'Overflow' }], isError: true })).toBe('Overflow');
  });
});
