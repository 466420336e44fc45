import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { readFileSync } from 'fs';
import { createServer, Server as HttpServer } from 'http';
import type { AddressInfo } from 'net';
import { join } from 'path';
import { restoreInitializedSession, SDK_VERSION_OF_RESTORE } from './restore-initialized-session';

const SESSION_ID = '0f9d3c52-7a1e-4d8b-9c6f-2b1a0e5d4c3b';
const INITIALIZE = {
  protocolVersion: '2025-06-18',
  capabilities: { roots: { listChanged: true }, elicitation: {} },
  clientInfo: { name: 'desktop-assistant', version: '2.1.0' },
};

function sdkPair() {
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => SESSION_ID });
  const server = new Server({ name: 'spec', version: '1' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [{ name: 'echo', inputSchema: { type: 'object' } }] }));
  return { transport, server };
}

/** Serves `transport` on 127.0.0.1 and posts `tools/list` in session {@link SESSION_ID}. */
async function listToolsThrough(transport: StreamableHTTPServerTransport): Promise<{ status: number; text: string }> {
  const http: HttpServer = createServer((request, response) => void transport.handleRequest(request, response));
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  try {
    const response = await fetch(`http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'Mcp-Session-Id': SESSION_ID,
        'Mcp-Protocol-Version': INITIALIZE.protocolVersion,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/list' }),
    });
    return { status: response.status, text: await response.text() };
  } finally {
    await transport.close();
    await new Promise((resolve) => http.close(resolve));
  }
}

describe('restoreInitializedSession', () => {
  it("is written for the SDK version installed: on an upgrade, re-read the SDK's transport and Server and update it", () => {
    const sdkPackage = JSON.parse(readFileSync(join(__dirname, '../../../../node_modules/@modelcontextprotocol/sdk/package.json'), 'utf8'));
    expect(sdkPackage.version).toBe(SDK_VERSION_OF_RESTORE);
  });

  it('makes a new transport serve the session without an initialize of its own', async () => {
    const { transport, server } = sdkPair();
    await restoreInitializedSession(transport, server, SESSION_ID, INITIALIZE);
    await server.connect(transport);
    const answer = await listToolsThrough(transport);
    expect(answer.status).toBe(200);
    expect(answer.text).toContain('"id":7');
    expect(answer.text).toContain('"name":"echo"');
    expect(transport.sessionId).toBe(SESSION_ID);
  });

  it("gives the server the client's capabilities and info from the recorded initialize", async () => {
    const { transport, server } = sdkPair();
    await restoreInitializedSession(transport, server, SESSION_ID, INITIALIZE);
    expect(server.getClientCapabilities()).toEqual(INITIALIZE.capabilities);
    expect(server.getClientVersion()).toEqual(INITIALIZE.clientInfo);
  });

  it("is needed: without it the SDK refuses the session's requests", async () => {
    const { transport, server } = sdkPair();
    await server.connect(transport);
    const answer = await listToolsThrough(transport);
    expect(answer.status).toBe(400);
    expect(answer.text).toContain('Server not initialized');
  });

  it("throws, naming the SDK version it expects, when the SDK's internals are not where it looks", async () => {
    const { server } = sdkPair();
    const unlike = {} as StreamableHTTPServerTransport;
    await expect(restoreInitializedSession(unlike, server, SESSION_ID, INITIALIZE)).rejects.toThrow(
      `the SDK's internals are not those of @modelcontextprotocol/sdk ${SDK_VERSION_OF_RESTORE}`,
    );
  });
});
