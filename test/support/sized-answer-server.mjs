/**
 * An MCP server, written with the SDK's own classes, whose tool `sized` answers with a text of
 * as many bytes as it is asked for, and `echo` with its text. It runs in a process of its own,
 * so that what the gateway holds of its answers is all a test process's memory shows:
 * `node sized-answer-server.mjs` speaks stdio; `node sized-answer-server.mjs http` serves, on
 * 127.0.0.1, stateless Streamable HTTP (answers as event streams at `/mcp`, as JSON at `/json`)
 * and the older SSE transport (`/sse`, every answer on one event stream), and prints
 * `listening on <port>`.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { createServer } from 'http';

const TOOLS = [
  {
    name: 'sized',
    description: 'Answers with a text of `bytes` characters',
    inputSchema: { type: 'object', properties: { bytes: { type: 'integer', minimum: 0 } }, required: ['bytes'] },
  },
  {
    name: 'echo',
    description: 'Answers with its text',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  },
];

function mcpServer() {
  const server = new Server({ name: 'sized-answers', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: TOOLS }));
  server.setRequestHandler(CallToolRequestSchema, ({ params }) => {
    const text = params.name === 'sized' ? 'x'.repeat(params.arguments.bytes) : String(params.arguments.text);
    return { content: [{ type: 'text', text }] };
  });
  return server;
}

/** The older SSE transport: a GET opens a session's event stream, its requests come as POSTs. */
const sseSessions = new Map();

async function serveSse(request, response) {
  if (request.method === 'GET') {
    const transport = new SSEServerTransport('/messages', response);
    sseSessions.set(transport.sessionId, transport);
    transport.onclose = () => sseSessions.delete(transport.sessionId);
    return mcpServer().connect(transport);
  }
  const transport = sseSessions.get(new URL(request.url, 'http://localhost').searchParams.get('sessionId'));
  if (!transport) return void response.writeHead(404).end();
  return transport.handlePostMessage(request, response);
}

if (process.argv[2] === 'http') {
  const http = createServer(async (request, response) => {
    if (request.url === '/sse' || request.url.startsWith('/messages')) return serveSse(request, response);
    if (request.method !== 'POST') return void response.writeHead(405).end();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: request.url === '/json' });
    response.on('close', () => void transport.close());
    await mcpServer().connect(transport);
    await transport.handleRequest(request, response);
  });
  http.listen(0, '127.0.0.1', () => console.log(`listening on ${http.address().port}`));
} else {
  await mcpServer().connect(new StdioServerTransport());
}
