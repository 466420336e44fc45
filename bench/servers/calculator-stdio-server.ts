import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, CallToolResult, ListToolsRequestSchema, Tool } from '@modelcontextprotocol/sdk/types.js';

/**
 * The peer's MCP server: the gateway's example `calculator` tool (src/examples/calculator) as a
 * stdio MCP server written with the official SDK's low-level `Server`, which supergateway runs
 * as its child and exposes over WebSocket. Same name, same input schema, same answer (the number
 * as text), so both sides of the peer figure serve one tool to one client. The arguments are
 * checked by hand, not by a schema validator: the least a correct tool does.
 */
const OPERATIONS = ['add', 'subtract', 'multiply', 'divide'] as const;
type Operation = (typeof OPERATIONS)[number];

const CALCULATOR: Tool = {
  name: 'calculator',
  description: 'A simple calculator: adds, subtracts, multiplies or divides two numbers.',
  inputSchema: {
    type: 'object',
    properties: {
      a: { type: 'number', description: 'The first number' },
      b: { type: 'number', description: 'The second number' },
      operation: { type: 'string', enum: [...OPERATIONS], default: 'add', description: 'What to do with the two numbers' },
    },
    required: ['a', 'b'],
    additionalProperties: false,
  },
};

const failed = (message: string): CallToolResult => ({ content: [{ type: 'text', text: message }], isError: true });

function calculate(args: Record<string, unknown> = {}): CallToolResult {
  const { a, b, operation = 'add' } = args;
  if (typeof a !== 'number' || typeof b !== 'number') return failed('a and b must be numbers');
  if (!OPERATIONS.includes(operation as Operation)) return failed(`operation must be one of ${OPERATIONS.join(', ')}`);
  if (operation === 'divide' && b === 0) return failed('Division by zero');
  const value = operation === 'add' ? a + b : operation === 'subtract' ? a - b : operation === 'multiply' ? a * b : a / b;
  return { content: [{ type: 'text', text: JSON.stringify(value) }] };
}

const server = new Server({ name: 'calculator-stdio', version: '1.0.0' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [CALCULATOR] }));
server.setRequestHandler(CallToolRequestSchema, (request) => {
  if (request.params.name !== CALCULATOR.name) return failed(`Unknown tool ${request.params.name}`);
  return calculate(request.params.arguments);
});

server.connect(new StdioServerTransport()).catch((error: Error) => {
  process.stderr.write(`calculator-stdio-server: ${error.stack ?? error}\n`);
  process.exit(1);
});
