import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { completable } from '@modelcontextprotocol/sdk/server/completable.js';
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CallToolRequestSchema,
  CreateMessageResultSchema,
  ElicitResultSchema,
  ErrorCode,
  isInitializeRequest,
  ListToolsRequestSchema,
  LoggingLevelSchema,
  McpError,
  SetLevelRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import type { CallToolResult, JSONRPCMessage, LoggingLevel, ServerNotification, ServerRequest, Tool } from '@modelcontextprotocol/sdk/types.js';
import { randomUUID } from 'crypto';
import type { Request, Response } from 'express';
import type { Server } from 'http';
import type { AddressInfo } from 'net';
import { z } from 'zod';
import { PNG, silentWav } from './conformance-media';

const LOG_LEVELS = LoggingLevelSchema.options;

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const text = (value: string): CallToolResult => ({ content: [{ type: 'text', text: value }] });

/** What a tool gets: the request's context (to notify or ask the client on its stream) and the session's log. */
interface ToolContext {
  extra: RequestHandlerExtra<ServerRequest, ServerNotification>;
  log(level: LoggingLevel, data: string): Promise<void>;
}

interface ConformanceTool {
  definition: Tool;
  run(args: Record<string, any>, context: ToolContext): CallToolResult | Promise<CallToolResult>;
}

const NO_ARGUMENTS = { type: 'object' as const, properties: {} };

/** Asks the client to fill `requestedSchema`, on the stream of the call that asks. */
async function elicit(context: ToolContext, message: string, requestedSchema: Record<string, unknown>): Promise<CallToolResult> {
  const answer = await context.extra.sendRequest({ method: 'elicitation/create', params: { message, requestedSchema } } as ServerRequest, ElicitResultSchema);
  return text(`Elicitation completed: action=${answer.action}, content=${JSON.stringify(answer.content ?? {})}`);
}

/**
 * The tools the scenarios call, with plain JSON Schemas: `json-schema-2020-12` checks that
 * `$schema`, `$defs` and `additionalProperties` arrive as written, which McpServer's conversion
 * of zod schemas (draft 7) cannot give, so tools are served by the low-level server.
 */
const TOOLS: ConformanceTool[] = [
  {
    definition: { name: 'test_simple_text', description: 'Returns simple text', inputSchema: NO_ARGUMENTS },
    run: () => text('This is a simple text response for testing.'),
  },
  {
    definition: { name: 'test_image_content', description: 'Returns an image', inputSchema: NO_ARGUMENTS },
    run: () => ({ content: [{ type: 'image', data: PNG, mimeType: 'image/png' }] }),
  },
  {
    definition: { name: 'test_audio_content', description: 'Returns audio', inputSchema: NO_ARGUMENTS },
    run: () => ({ content: [{ type: 'audio', data: silentWav(), mimeType: 'audio/wav' }] }),
  },
  {
    definition: { name: 'test_embedded_resource', description: 'Returns an embedded resource', inputSchema: NO_ARGUMENTS },
    run: () => ({
      content: [{ type: 'resource', resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' } }],
    }),
  },
  {
    definition: { name: 'test_multiple_content_types', description: 'Returns text, an image and a resource', inputSchema: NO_ARGUMENTS },
    run: () => ({
      content: [
        { type: 'text', text: 'Multiple content types test:' },
        { type: 'image', data: PNG, mimeType: 'image/png' },
        { type: 'resource', resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: '{"test":"data","value":123}' } },
      ],
    }),
  },
  {
    definition: { name: 'test_tool_with_logging', description: 'Logs three messages while it runs', inputSchema: NO_ARGUMENTS },
    run: async (_args, { log }) => {
      await log('info', 'Tool execution started');
      await delay(50);
      await log('info', 'Tool processing data');
      await delay(50);
      await log('info', 'Tool execution completed');
      return text('Tool with logging executed successfully');
    },
  },
  {
    definition: { name: 'test_error_handling', description: 'Always fails', inputSchema: NO_ARGUMENTS },
    run: () => {
      throw new Error('This tool intentionally returns an error for testing');
    },
  },
  {
    definition: { name: 'test_tool_with_progress', description: 'Reports progress 0, 50 and 100 of 100', inputSchema: NO_ARGUMENTS },
    run: async (_args, { extra }) => {
      const progressToken = extra._meta?.progressToken;
      for (const progress of [0, 50, 100]) {
        if (progress > 0) await delay(50);
        if (progressToken !== undefined) await extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress, total: 100 } });
      }
      return text('Tool with progress executed successfully');
    },
  },
  {
    definition: {
      name: 'test_sampling',
      description: 'Asks the client to sample its LLM',
      inputSchema: { type: 'object', properties: { prompt: { type: 'string', description: 'The prompt to send to the LLM' } }, required: ['prompt'] },
    },
    run: async ({ prompt }, { extra }) => {
      const answer = await extra.sendRequest(
        { method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: String(prompt) } }], maxTokens: 100 } },
        CreateMessageResultSchema,
      );
      const content = Array.isArray(answer.content) ? answer.content[0] : answer.content;
      return text(`LLM response: ${content?.type === 'text' ? content.text : JSON.stringify(content)}`);
    },
  },
  {
    definition: {
      name: 'test_elicitation',
      description: 'Asks the user for a name and an email address',
      inputSchema: { type: 'object', properties: { message: { type: 'string', description: 'The message to show the user' } }, required: ['message'] },
    },
    run: ({ message }, context) =>
      elicit(context, String(message), {
        type: 'object',
        properties: { username: { type: 'string', description: "User's response" }, email: { type: 'string', description: "User's email address" } },
        required: ['username', 'email'],
      }),
  },
  {
    definition: { name: 'test_elicitation_sep1034_defaults', description: 'Elicits with a default for each primitive type', inputSchema: NO_ARGUMENTS },
    run: (_args, context) =>
      elicit(context, 'Please review your details', {
        type: 'object',
        properties: {
          name: { type: 'string', default: 'John Doe' },
          age: { type: 'integer', default: 30 },
          score: { type: 'number', default: 95.5 },
          status: { type: 'string', enum: ['active', 'inactive', 'pending'], default: 'active' },
          verified: { type: 'boolean', default: true },
        },
      }),
  },
  {
    definition: { name: 'test_elicitation_sep1330_enums', description: 'Elicits with each kind of enum', inputSchema: NO_ARGUMENTS },
    run: (_args, context) =>
      elicit(context, 'Please choose', {
        type: 'object',
        properties: {
          untitledSingle: { type: 'string', enum: ['option1', 'option2', 'option3'] },
          titledSingle: {
            type: 'string',
            oneOf: [
              { const: 'value1', title: 'First Option' },
              { const: 'value2', title: 'Second Option' },
              { const: 'value3', title: 'Third Option' },
            ],
          },
          legacyEnum: { type: 'string', enum: ['opt1', 'opt2', 'opt3'], enumNames: ['Option One', 'Option Two', 'Option Three'] },
          untitledMulti: { type: 'array', items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
          titledMulti: {
            type: 'array',
            items: {
              anyOf: [
                { const: 'value1', title: 'First Choice' },
                { const: 'value2', title: 'Second Choice' },
                { const: 'value3', title: 'Third Choice' },
              ],
            },
          },
        },
      }),
  },
  {
    definition: {
      name: 'json_schema_2020_12_tool',
      description: 'Tool with JSON Schema 2020-12 features',
      inputSchema: {
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        $defs: { address: { type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
        properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
        additionalProperties: false,
      },
    },
    run: (args) => text(`Received ${JSON.stringify(args)}`),
  },
  {
    definition: { name: 'test_reconnection', description: 'Closes its SSE stream before answering (SEP-1699)', inputSchema: NO_ARGUMENTS },
    run: async (_args, { extra }) => {
      // Offered only to a client whose protocol version can resume a stream (2025-11-25 on).
      extra.closeSSEStream?.();
      await delay(100);
      return text('Reconnection test completed successfully');
    },
  },
];

/** One session's server: the SDK's McpServer for resources, prompts and completions; tools and logging by hand. */
export function conformanceServer(): McpServer {
  const mcp = new McpServer(
    { name: 'conformance-upstream', version: '1.0.0' },
    { capabilities: { tools: {}, logging: {}, resources: { subscribe: true }, prompts: {}, completions: {} } },
  );

  let minimumLevel: LoggingLevel = 'debug';
  mcp.server.setRequestHandler(SetLevelRequestSchema, ({ params }) => {
    minimumLevel = params.level;
    return {};
  });

  mcp.server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: TOOLS.map((tool) => tool.definition) }));
  mcp.server.setRequestHandler(CallToolRequestSchema, async ({ params }, extra) => {
    const tool = TOOLS.find((candidate) => candidate.definition.name === params.name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool ${params.name}`);
    const log = async (level: LoggingLevel, data: string) => {
      if (LOG_LEVELS.indexOf(level) < LOG_LEVELS.indexOf(minimumLevel)) return;
      await extra.sendNotification({ method: 'notifications/message', params: { level, logger: 'conformance-upstream', data } });
    };
    try {
      return await tool.run(params.arguments ?? {}, { extra, log });
    } catch (error) {
      return { isError: true, content: [{ type: 'text', text: error instanceof Error ? error.message : String(error) }] };
    }
  });

  const textResource = (name: string, uri: string, description: string, body: string) =>
    mcp.registerResource(name, uri, { description, mimeType: 'text/plain' }, (url) => ({ contents: [{ uri: url.href, mimeType: 'text/plain', text: body }] }));
  textResource('static-text', 'test://static-text', 'A static text resource', 'This is the content of the static text resource.');
  textResource('watched-resource', 'test://watched-resource', 'A resource to subscribe to', 'This is the content of the watched resource.');
  mcp.registerResource('static-binary', 'test://static-binary', { description: 'A static binary resource', mimeType: 'image/png' }, (url) => ({
    contents: [{ uri: url.href, mimeType: 'image/png', blob: PNG }],
  }));
  mcp.registerResource(
    'template-data',
    new ResourceTemplate('test://template/{id}/data', { list: undefined, complete: { id: (value) => ['123', '456'].filter((id) => id.startsWith(value)) } }),
    { description: 'Data for an id', mimeType: 'application/json' },
    (url, { id }) => ({
      contents: [{ uri: url.href, mimeType: 'application/json', text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }) }],
    }),
  );

  // Subscriptions are only tracked: nothing here changes, so no notifications/resources/updated is due.
  const subscriptions = new Set<string>();
  mcp.server.setRequestHandler(SubscribeRequestSchema, ({ params }) => {
    subscriptions.add(params.uri);
    return {};
  });
  mcp.server.setRequestHandler(UnsubscribeRequestSchema, ({ params }) => {
    subscriptions.delete(params.uri);
    return {};
  });

  mcp.registerPrompt('test_simple_prompt', { description: 'A prompt without arguments' }, () => ({
    messages: [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }],
  }));
  mcp.registerPrompt(
    'test_prompt_with_arguments',
    {
      description: 'A prompt with two arguments',
      argsSchema: {
        arg1: completable(z.string().describe('First test argument'), (value) => ['paris', 'park', 'party', 'test'].filter((word) => word.startsWith(value))),
        arg2: z.string().describe('Second test argument'),
      },
    },
    ({ arg1, arg2 }) => ({ messages: [{ role: 'user', content: { type: 'text', text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` } }] }),
  );
  mcp.registerPrompt(
    'test_prompt_with_embedded_resource',
    { description: 'A prompt embedding a resource', argsSchema: { resourceUri: z.string().describe('URI of the resource to embed') } },
    ({ resourceUri }) => ({
      messages: [
        { role: 'user', content: { type: 'resource', resource: { uri: resourceUri, mimeType: 'text/plain', text: 'Embedded resource content for testing.' } } },
        { role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } },
      ],
    }),
  );
  mcp.registerPrompt('test_prompt_with_image', { description: 'A prompt with an image' }, () => ({
    messages: [
      { role: 'user', content: { type: 'image', data: PNG, mimeType: 'image/png' } },
      { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } },
    ],
  }));

  return mcp;
}

/** Keeps every SSE event of a session so a client can resume a stream with `Last-Event-ID` (SEP-1699). */
class MemoryEventStore implements EventStore {
  private readonly events: { eventId: string; streamId: string; message: JSONRPCMessage }[] = [];

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const eventId = `${streamId}:${this.events.length}`;
    this.events.push({ eventId, streamId, message });
    return eventId;
  }

  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    return this.events.find((event) => event.eventId === eventId)?.streamId;
  }

  async replayEventsAfter(lastEventId: string, { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> }): Promise<string> {
    const index = this.events.findIndex((event) => event.eventId === lastEventId);
    if (index < 0) throw new Error(`Unknown event ${lastEventId}`);
    const { streamId } = this.events[index];
    for (const event of this.events.slice(index + 1)) {
      // Priming events are stored as `{}`: they only mark a position and are not replayed.
      if (event.streamId === streamId && 'jsonrpc' in event.message) await send(event.eventId, event.message);
    }
    return streamId;
  }
}

/**
 * Starts an MCP server written for the official conformance suite (`@modelcontextprotocol/conformance`):
 * the tools, resources, resource template, prompts, completions, logging, progress, sampling and
 * elicitation its server scenarios ask for, over Streamable HTTP with sessions, resumable streams
 * and DNS rebinding protection, on 127.0.0.1 port 0. Written from the scenarios' checks with the
 * official SDK, so that the suite can be run against it directly and through the gateway, and the
 * difference is the gateway's.
 */
export async function startConformanceUpstream(): Promise<{ url: string; close(): Promise<void> }> {
  const sessions = new Map<string, { transport: StreamableHTTPServerTransport; server: McpServer }>();
  const refuse = (res: Response, status: number, message: string) => res.status(status).json({ jsonrpc: '2.0', error: { code: -32000, message }, id: null });

  // Refuses a Host other than localhost, 127.0.0.1 or [::1] with 403 (dns-rebinding-protection).
  const app = createMcpExpressApp({ host: '127.0.0.1' });
  app.post('/mcp', async (req: Request, res: Response) => {
    const sessionId = req.header('mcp-session-id');
    let session = sessionId === undefined ? undefined : sessions.get(sessionId);
    if (!session) {
      if (sessionId !== undefined) return void refuse(res, 404, 'Session not found');
      if (!isInitializeRequest(req.body)) return void refuse(res, 400, 'Bad Request: no session id, and not an initialize request');
      const server = conformanceServer();
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        eventStore: new MemoryEventStore(),
        retryInterval: 500,
        onsessioninitialized: (id) => void sessions.set(id, { transport, server }),
      });
      transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId);
      };
      await server.connect(transport);
      session = { transport, server };
    }
    await session.transport.handleRequest(req, res, req.body);
  });
  const existingSession = async (req: Request, res: Response) => {
    const sessionId = req.header('mcp-session-id');
    const session = sessionId === undefined ? undefined : sessions.get(sessionId);
    if (!session) return void refuse(res, sessionId === undefined ? 400 : 404, sessionId === undefined ? 'Bad Request: no session id' : 'Session not found');
    await session.transport.handleRequest(req, res);
  };
  app.get('/mcp', existingSession);
  app.delete('/mcp', existingSession);

  const http: Server = await new Promise((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: async () => {
      await Promise.all([...sessions.values()].map(({ server }) => server.close().catch(() => undefined)));
      sessions.clear();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
