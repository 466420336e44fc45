import { loadGatewayConfig } from '../../src/config/gateway-config';
import type { ToolDefinition, ToolSpec } from '../../src/core/tools/tool-definition';
import { ToolRegistryService } from '../../src/core/tools/tool-registry.service';

/**
 * A catalogue tool as the registry would hold it (defaults filled in, schema checked), for the
 * unit specs of the protocol mappers; the default time limit is SERVER_TOOL_TIMEOUT's, 10 s.
 */
export const defineTool = (spec: Partial<ToolSpec>): ToolDefinition =>
  new ToolRegistryService(loadGatewayConfig({ SERVER_TOOL_TIMEOUT: '10' })).register({
    name: 'tool',
    description: 'A tool',
    inputSchema: { type: 'object' },
    source: 'module',
    handler: () => undefined,
    ...spec,
  });
