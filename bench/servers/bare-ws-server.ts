import { randomUUID } from 'crypto';
import { IncomingMessage } from 'http';
import { WebSocket, WebSocketServer } from 'ws';

/**
 * The baseline: a bare `ws` server with no framework, answering the frames the gateway answers
 * (LiteMCP, MCP envelope, MCP plain JSON-RPC, UTCP 0.1, and the LLM gateway's greeting) for the
 * bench's calculator call, with the same bearer check at the upgrade. It does the least any
 * server must: parse the frame, add two numbers, serialise the answer.
 */
const TOKEN = process.env.BENCH_TOKEN ?? '';
const port = Number(process.env.PORT);

const server = new WebSocketServer({
  host: '127.0.0.1',
  port,
  handleProtocols: (offered) => (offered.has('mcp') ? 'mcp' : false),
  verifyClient: ({ req }: { req: IncomingMessage }) => {
    const header = req.headers.authorization ?? '';
    const query = new URL(req.url ?? '/', 'http://localhost').searchParams.get('token');
    return header === `Bearer ${TOKEN}` || query === TOKEN || req.url === '/mcp';
  },
});

server.on('connection', (socket, request) => {
  const path = new URL(request.url ?? '/', 'http://localhost').pathname;
  if (path.startsWith('/litemcp/')) socket.on('message', (data) => answerLiteMcp(socket, data.toString()));
  else if (path === '/utcp') socket.on('message', (data) => answerUtcp(socket, data.toString()));
  else if (path === '/mcp' && socket.protocol === 'mcp')
    socket.on('message', (data) => answerJsonRpc(socket, JSON.parse(data.toString()), (payload) => payload));
  else if (path === '/mcp') answerEnvelopes(socket);
  else socket.send(JSON.stringify({ type: 'status', status: 'connected', session_id: randomUUID(), timestamp: new Date().toISOString() }));
});

function answerLiteMcp(socket: WebSocket, text: string): void {
  const frame = JSON.parse(text);
  const [a, b] = (frame.data.arguments as string[]).map(Number);
  socket.send(
    JSON.stringify({
      version: [1, 0, 0],
      id: frame.id,
      type: 'result',
      data: { params: { a, b }, response: { content: [{ type: 'number', data: String(a + b) }], error: false } },
    }),
  );
}

function answerUtcp(socket: WebSocket, text: string): void {
  const frame = JSON.parse(text);
  socket.send(JSON.stringify({ type: 'result', id: frame.id, result: frame.params.a + frame.params.b }));
}

function answerEnvelopes(socket: WebSocket): void {
  const sessionId = randomUUID();
  socket.on('message', (data) => {
    const frame = JSON.parse(data.toString());
    if (frame.type === 'auth') {
      const ok = frame.token === TOKEN;
      socket.send(JSON.stringify({ type: 'auth', sessionId, status: ok ? 'authenticated' : 'failed', timestamp: Date.now() }));
      if (!ok) socket.close(4401);
    } else if (frame.type === 'message') {
      answerJsonRpc(socket, frame.payload, (payload) => ({ type: 'message', sessionId, payload, timestamp: Date.now() }));
    }
  });
}

function answerJsonRpc(socket: WebSocket, message: { id?: number; method: string; params?: any }, wrap: (payload: object) => object): void {
  if (message.id === undefined) return;
  const result =
    message.method === 'tools/call'
      ? { content: [{ type: 'text', text: String(message.params.arguments.a + message.params.arguments.b) }] }
      : { protocolVersion: message.params?.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'bare', version: '0' } };
  socket.send(JSON.stringify(wrap({ jsonrpc: '2.0', id: message.id, result })));
}

process.on('SIGTERM', () => {
  server.clients.forEach((client) => client.terminate());
  server.close(() => process.exit(0));
});
