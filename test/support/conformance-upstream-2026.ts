import {
  acceptedContent,
  CLIENT_CAPABILITIES_META_KEY,
  completable,
  createMcpHandler,
  createRequestStateCodec,
  fromJsonSchema,
  hostHeaderValidationResponse,
  inputRequired,
  inputResponse,
  localhostAllowedHostnames,
  localhostAllowedOrigins,
  McpServer,
  originValidationResponse,
  ResourceTemplate,
} from '@modelcontextprotocol/server';
import type {
  CallToolResult,
  ClientCapabilities,
  InputRequest,
  InputRequiredResult,
  JsonSchemaType,
  McpHttpHandler,
  ServerContext,
} from '@modelcontextprotocol/server';
import { randomBytes } from 'crypto';
import { createServer, IncomingMessage, Server, ServerResponse } from 'http';
import type { AddressInfo } from 'net';
import { Readable } from 'stream';
import type { ReadableStream as WebReadableStream } from 'stream/web';
import { z } from 'zod';
import { PNG, silentWav } from './conformance-media';

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const text = (value: string): CallToolResult => ({ content: [{ type: 'text', text: value }] });
const NO_ARGUMENTS = fromJsonSchema({ type: 'object', properties: {} });

/** The elicitation of one field, as the input-required scenarios word it. */
const askFor = (message: string, field: string, type: 'string' | 'boolean' = 'string'): InputRequest =>
  inputRequired.elicit({
    message,
    requestedSchema: { type: 'object', properties: { [field]: type === 'boolean' ? { type: 'boolean' } : { type: 'string' } }, required: [field] },
  });

const askSampling = (prompt: string, maxTokens: number): InputRequest =>
  inputRequired.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: prompt } }], maxTokens });

/** The client capabilities a 2026 request declares in its `_meta` envelope. */
function declaredCapabilities(context: ServerContext): ClientCapabilities {
  return ((context.mcpReq.envelope as Record<string, unknown> | undefined)?.[CLIENT_CAPABILITIES_META_KEY] as ClientCapabilities | undefined) ?? {};
}

/** Which scenario-visible lists the diagnostic triggers have changed, shared by every request's server. */
interface Mutations {
  /** Whether `test_dynamic_tool` is listed; `test_trigger_tool_change` flips it. */
  dynamicTool: boolean;
  /** Whether `test_dynamic_prompt` is listed; `test_trigger_prompt_change` flips it. */
  dynamicPrompt: boolean;
}

/** What every request's server shares: the list state, the HMAC codec of `requestState`, and the handler that notifies listen streams. */
interface Shared {
  mutations: Mutations;
  codec: ReturnType<typeof createRequestStateCodec<{ tool: string; round: number }>>;
  handler(): McpHttpHandler;
}

/** The request state a round carries: which tool minted it, and which round comes next. */
function roundState(context: ServerContext): { tool: string; round: number } | undefined {
  // The SDK has verified it with the codec (ServerOptions.requestState.verify) and hands over its payload.
  return context.mcpReq.requestState<{ tool: string; round: number }>();
}

function registerTools(mcp: McpServer, shared: Shared): void {
  const simple = (name: string, description: string, result: () => CallToolResult) =>
    mcp.registerTool(name, { description, inputSchema: NO_ARGUMENTS }, () => result());

  simple('test_simple_text', 'Returns simple text', () => text('This is a simple text response for testing.'));
  simple('test_image_content', 'Returns an image', () => ({ content: [{ type: 'image', data: PNG, mimeType: 'image/png' }] }));
  simple('test_audio_content', 'Returns audio', () => ({ content: [{ type: 'audio', data: silentWav(), mimeType: 'audio/wav' }] }));
  simple('test_embedded_resource', 'Returns an embedded resource', () => ({
    content: [{ type: 'resource', resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' } }],
  }));
  simple('test_multiple_content_types', 'Returns text, an image and a resource', () => ({
    content: [
      { type: 'text', text: 'Multiple content types test:' },
      { type: 'image', data: PNG, mimeType: 'image/png' },
      { type: 'resource', resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: '{"test":"data","value":123}' } },
    ],
  }));
  mcp.registerTool('test_error_handling', { description: 'Always fails', inputSchema: NO_ARGUMENTS }, () => {
    throw new Error('This tool intentionally returns an error for testing');
  });

  mcp.registerTool('test_tool_with_progress', { description: 'Reports progress 0, 50 and 100 of 100', inputSchema: NO_ARGUMENTS }, async (_args, context) => {
    const progressToken = context.mcpReq._meta?.progressToken;
    for (const progress of [0, 50, 100]) {
      if (progress > 0) await delay(50);
      if (progressToken !== undefined) await context.mcpReq.notify({ method: 'notifications/progress', params: { progressToken, progress, total: 100 } });
    }
    return text('Tool with progress executed successfully');
  });

  // Logs only at the level the request's `_meta` asks for, none when it asks for none (server-stateless).
  for (const name of ['test_tool_with_logging', 'test_logging_tool']) {
    mcp.registerTool(name, { description: 'Logs three messages while it runs', inputSchema: NO_ARGUMENTS }, async (_args, context) => {
      await context.mcpReq.log('info', 'Tool execution started', 'conformance-upstream-2026');
      await delay(50);
      await context.mcpReq.log('info', 'Tool processing data', 'conformance-upstream-2026');
      await delay(50);
      await context.mcpReq.log('info', 'Tool execution completed', 'conformance-upstream-2026');
      return text('Tool with logging executed successfully');
    });
  }

  mcp.registerTool(
    'json_schema_2020_12_tool',
    {
      description: 'Tool with JSON Schema 2020-12 features',
      // The suite's own schema (SEP-1613, SEP-2106): every 2020-12 keyword must reach the client as written.
      inputSchema: fromJsonSchema({
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        $defs: { address: { $anchor: 'addressDef', type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
        properties: {
          name: { type: 'string' },
          address: { $ref: '#/$defs/address' },
          contactMethod: { type: 'string', enum: ['phone', 'email'] },
          phone: { type: 'string' },
          email: { type: 'string' },
        },
        allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
        if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
        then: { required: ['phone'] },
        else: { required: ['email'] },
        additionalProperties: false,
      } as JsonSchemaType),
    },
    (args) => text(`Received ${JSON.stringify(args)}`),
  );

  // SEP-2243: a parameter the client mirrors in an `Mcp-Param-Region` header, which the SDK checks against the body.
  mcp.registerTool(
    'test_header_param',
    {
      description: 'Echoes a region the client also sends as the Mcp-Param-Region header',
      inputSchema: fromJsonSchema({
        type: 'object',
        properties: { region: { type: 'string', description: 'A region name', 'x-mcp-header': 'Region' } },
        required: ['region'],
      } as JsonSchemaType),
    },
    (args) => text(`Region: ${String((args as { region?: unknown }).region)}`),
  );

  // server-stateless: a tool that needs sampling, which the SDK refuses with -32021 to a client that did not declare it.
  mcp.registerTool('test_missing_capability', { description: 'Needs the client to sample', inputSchema: NO_ARGUMENTS }, (_args, context) =>
    inputResponse(context.mcpReq.inputResponses, 'answer').kind === 'sampling'
      ? text('Sampled')
      : inputRequired({ inputRequests: { answer: askSampling('Say hello', 20) } }),
  );
  // On 2026 a server asks its client in an input_required result, never in a request on the response stream.
  mcp.registerTool('test_streaming_elicitation', { description: 'Asks for a name', inputSchema: NO_ARGUMENTS }, (_args, context) => {
    const name = acceptedContent<{ name?: string }>(context.mcpReq.inputResponses, 'user_name')?.name;
    return name === undefined ? inputRequired({ inputRequests: { user_name: askFor('What is your name?', 'name') } }) : text(`Hello, ${name}!`);
  });
  mcp.registerTool('test_trigger_tool_change', { description: 'Adds or removes test_dynamic_tool', inputSchema: NO_ARGUMENTS }, () => {
    shared.mutations.dynamicTool = !shared.mutations.dynamicTool;
    shared.handler().notify.toolsChanged();
    return text(`test_dynamic_tool is ${shared.mutations.dynamicTool ? 'listed' : 'gone'}`);
  });
  mcp.registerTool('test_trigger_prompt_change', { description: 'Adds or removes test_dynamic_prompt', inputSchema: NO_ARGUMENTS }, () => {
    shared.mutations.dynamicPrompt = !shared.mutations.dynamicPrompt;
    shared.handler().notify.promptsChanged();
    return text(`test_dynamic_prompt is ${shared.mutations.dynamicPrompt ? 'listed' : 'gone'}`);
  });
  if (shared.mutations.dynamicTool) simple('test_dynamic_tool', 'Listed while test_trigger_tool_change says so', () => text('dynamic'));

  registerInputRequiredTools(mcp, shared);
}

/** The tools of the `input-required-result-*` scenarios (SEP-2322, multi round-trip requests). */
function registerInputRequiredTools(mcp: McpServer, shared: Shared): void {
  const tool = (
    name: string,
    description: string,
    run: (context: ServerContext) => CallToolResult | InputRequiredResult | Promise<CallToolResult | InputRequiredResult>,
  ) => mcp.registerTool(name, { description, inputSchema: NO_ARGUMENTS }, (_args, context) => run(context));
  const responses = (context: ServerContext) => context.mcpReq.inputResponses;

  // Asks again for what is missing (a wrong key, a response that is not an elicitation result), never fails.
  tool('test_input_required_result_elicitation', 'Asks for a name, then greets', (context) => {
    const name = acceptedContent<{ name?: unknown }>(responses(context), 'user_name')?.name;
    return typeof name === 'string' ? text(`Hello, ${name}!`) : inputRequired({ inputRequests: { user_name: askFor('What is your name?', 'name') } });
  });
  tool('test_input_required_result_sampling', 'Asks the client to sample, then answers with it', (context) => {
    const answer = inputResponse(responses(context), 'capital_question');
    if (answer.kind !== 'sampling') return inputRequired({ inputRequests: { capital_question: askSampling('What is the capital of France?', 100) } });
    const content = Array.isArray(answer.result.content) ? answer.result.content[0] : answer.result.content;
    return text(`LLM response: ${content?.type === 'text' ? content.text : JSON.stringify(content)}`);
  });
  tool('test_input_required_result_list_roots', "Asks for the client's roots, then names them", (context) => {
    const answer = inputResponse(responses(context), 'client_roots');
    return answer.kind === 'roots'
      ? text(`Roots: ${answer.roots.map((root) => root.uri).join(', ')}`)
      : inputRequired({ inputRequests: { client_roots: inputRequired.listRoots() } });
  });
  tool('test_input_required_result_request_state', 'Asks for a confirmation, with request state', async (context) => {
    const state = roundState(context);
    const ok = acceptedContent<{ ok?: unknown }>(responses(context), 'confirm')?.ok;
    if (state?.tool === 'test_input_required_result_request_state' && typeof ok === 'boolean') return text(`state-ok: confirmed=${ok}`);
    return inputRequired({
      inputRequests: { confirm: askFor('Please confirm', 'ok', 'boolean') },
      requestState: await shared.codec.mint({ tool: 'test_input_required_result_request_state', round: 2 }),
    });
  });
  tool('test_input_required_result_multiple_inputs', 'Asks for a name, a sampled greeting and the roots at once', async (context) => {
    const state = roundState(context);
    const name = acceptedContent<{ name?: unknown }>(responses(context), 'user_name')?.name;
    const greeting = inputResponse(responses(context), 'greeting');
    const roots = inputResponse(responses(context), 'client_roots');
    if (state?.tool === 'test_input_required_result_multiple_inputs' && typeof name === 'string' && greeting.kind === 'sampling' && roots.kind === 'roots') {
      return text(`Hello, ${name}, with ${roots.roots.length} root(s)`);
    }
    return inputRequired({
      inputRequests: {
        user_name: askFor('What is your name?', 'name'),
        greeting: askSampling('Generate a greeting', 50),
        client_roots: inputRequired.listRoots(),
      },
      requestState: await shared.codec.mint({ tool: 'test_input_required_result_multiple_inputs', round: 2 }),
    });
  });
  tool('test_input_required_result_multi_round', 'Asks for a name, then a colour, then answers', async (context) => {
    const state = roundState(context);
    const mint = (round: number) => shared.codec.mint({ tool: 'test_input_required_result_multi_round', round });
    if (state?.tool === 'test_input_required_result_multi_round' && state.round === 3) {
      const color = acceptedContent<{ color?: unknown }>(responses(context), 'step2')?.color;
      if (typeof color === 'string') return text(`Favourite colour: ${color}`);
      return inputRequired({ inputRequests: { step2: askFor('Step 2: What is your favorite color?', 'color') }, requestState: await mint(3) });
    }
    if (state?.tool === 'test_input_required_result_multi_round' && state.round === 2) {
      const name = acceptedContent<{ name?: unknown }>(responses(context), 'step1')?.name;
      if (typeof name === 'string')
        return inputRequired({ inputRequests: { step2: askFor('Step 2: What is your favorite color?', 'color') }, requestState: await mint(3) });
    }
    return inputRequired({ inputRequests: { step1: askFor('Step 1: What is your name?', 'name') }, requestState: await mint(2) });
  });
  // Its state is HMAC-signed like every other here: the SDK refuses an altered one with -32602 before the handler runs.
  tool('test_input_required_result_tampered_state', 'Asks for a confirmation, with signed request state', async (context) => {
    const state = roundState(context);
    if (state?.tool === 'test_input_required_result_tampered_state') return text('state-ok');
    return inputRequired({
      inputRequests: { confirm: askFor('Please confirm', 'ok', 'boolean') },
      requestState: await shared.codec.mint({ tool: 'test_input_required_result_tampered_state', round: 2 }),
    });
  });
  // Asks only what the request's declared capabilities allow.
  tool('test_input_required_result_capabilities', 'Asks for whatever the client declared it can give', (context) => {
    const capabilities = declaredCapabilities(context);
    if (Object.keys(responses(context) ?? {}).length > 0) return text('Thanks');
    const inputRequests: Record<string, InputRequest> = {};
    if (capabilities.elicitation) inputRequests.user_name = askFor('What is your name?', 'name');
    if (capabilities.sampling) inputRequests.greeting = askSampling('Generate a greeting', 50);
    if (capabilities.roots) inputRequests.client_roots = inputRequired.listRoots();
    return Object.keys(inputRequests).length > 0 ? inputRequired({ inputRequests }) : text('Nothing to ask this client');
  });
}

function registerResources(mcp: McpServer): void {
  const textResource = (name: string, uri: string, description: string, body: string) =>
    mcp.registerResource(name, uri, { description, mimeType: 'text/plain' }, (url) => ({ contents: [{ uri: url.href, mimeType: 'text/plain', text: body }] }));
  textResource('static-text', 'test://static-text', 'A static text resource', 'This is the content of the static text resource.');
  textResource('watched-resource', 'test://watched-resource', 'A resource to listen to', 'This is the content of the watched resource.');
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
}

function registerPrompts(mcp: McpServer, shared: Shared): void {
  mcp.registerPrompt('test_simple_prompt', { description: 'A prompt without arguments' }, () => ({
    messages: [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }],
  }));
  mcp.registerPrompt(
    'test_prompt_with_arguments',
    {
      description: 'A prompt with two arguments',
      argsSchema: z.object({
        arg1: completable(z.string().describe('First test argument'), (value) => ['paris', 'park', 'party', 'test'].filter((word) => word.startsWith(value))),
        arg2: z.string().describe('Second test argument'),
      }),
    },
    ({ arg1, arg2 }) => ({ messages: [{ role: 'user', content: { type: 'text', text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` } }] }),
  );
  mcp.registerPrompt(
    'test_prompt_with_embedded_resource',
    { description: 'A prompt embedding a resource', argsSchema: z.object({ resourceUri: z.string().describe('URI of the resource to embed') }) },
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
  // SEP-2322 on a request other than tools/call.
  mcp.registerPrompt('test_input_required_result_prompt', { description: 'Asks for the context it should use' }, (context) => {
    const about = acceptedContent<{ context?: unknown }>(context.mcpReq.inputResponses, 'user_context')?.context;
    if (typeof about !== 'string') {
      return inputRequired({ inputRequests: { user_context: askFor('What context should the prompt use?', 'context') } }) as never;
    }
    return { messages: [{ role: 'user', content: { type: 'text', text: `Answer within this context: ${about}` } }] };
  });
  if (shared.mutations.dynamicPrompt) {
    mcp.registerPrompt('test_dynamic_prompt', { description: 'Listed while test_trigger_prompt_change says so' }, () => ({
      messages: [{ role: 'user', content: { type: 'text', text: 'dynamic' } }],
    }));
  }
}

/** The server of one request: a fresh McpServer over the shared state (createMcpHandler's per-request factory). */
function conformanceServer(shared: Shared): McpServer {
  const mcp = new McpServer(
    { name: 'conformance-upstream-2026', version: '1.0.0' },
    {
      capabilities: { tools: { listChanged: true }, resources: { listChanged: true }, prompts: { listChanged: true }, completions: {}, logging: {} },
      requestState: { verify: (state, context) => shared.codec.verify(state, context) },
    },
  );
  registerTools(mcp, shared);
  registerResources(mcp);
  registerPrompts(mcp, shared);
  return mcp;
}

/** The Fetch API's view of a Node request, with its body read already. */
function webRequestOf(request: IncomingMessage, body: Buffer, signal: AbortSignal): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined) continue;
    for (const each of Array.isArray(value) ? value : [value]) headers.append(name, each);
  }
  const hasBody = request.method !== 'GET' && request.method !== 'HEAD' && body.length > 0;
  return new Request(`http://${request.headers.host ?? '127.0.0.1'}${request.url ?? '/'}`, {
    method: request.method,
    headers,
    signal,
    ...(hasBody && { body }),
  });
}

async function writeWebResponse(answer: Response, response: ServerResponse): Promise<void> {
  response.statusCode = answer.status;
  answer.headers.forEach((value, name) => response.setHeader(name, value));
  if (!answer.body) return void response.end();
  Readable.fromWeb(answer.body as WebReadableStream).pipe(response);
}

/**
 * Starts an MCP server written for the official conformance suite's 2026-07-28 server scenarios
 * (`@modelcontextprotocol/conformance` 0.2.x, installed as `conformance-2026`), with the official
 * SDK 2.x (`@modelcontextprotocol/server`, `createMcpHandler`): a fresh `McpServer` per request
 * over shared state, on 127.0.0.1 port 0, answering `/mcp`.
 *
 * It has what the scenarios ask for: the tools, resources, template, prompts and completions of
 * the 2025 scenarios; SEP-2322's multi round-trip (`input_required`) tools and prompt, with
 * `requestState` HMAC-signed (`createRequestStateCodec`), so that a tampered state is refused;
 * server-stateless's diagnostic tools (`test_missing_capability`, `test_streaming_elicitation`,
 * `test_logging_tool`, and `test_trigger_tool_change` / `test_trigger_prompt_change`, which flip a
 * dynamic tool or prompt and notify `subscriptions/listen` streams); a tool with an `x-mcp-header`
 * parameter (SEP-2243); and Host / Origin checks (dns-rebinding-protection). Requests without the
 * 2026 envelope are served statelessly as 2025 ones (the SDK's default), so that a client of either
 * era can connect (the gateway negotiates: 2026 when the upstream answers `server/discover`).
 */
export async function startConformanceUpstream2026(): Promise<{ url: string; close(): Promise<void> }> {
  const shared: Shared = {
    mutations: { dynamicTool: false, dynamicPrompt: false },
    codec: createRequestStateCodec({ key: randomBytes(32), ttlSeconds: 300 }),
    handler: () => mcp,
  };
  const mcp: McpHttpHandler = createMcpHandler(() => conformanceServer(shared));

  const sockets = new Set<AbortController>();
  const http: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const aborted = new AbortController();
      sockets.add(aborted);
      response.once('close', () => {
        aborted.abort();
        sockets.delete(aborted);
      });
      void (async () => {
        const web = webRequestOf(request, Buffer.concat(chunks), aborted.signal);
        if (new URL(web.url).pathname !== '/mcp') return void response.writeHead(404).end();
        const refused = hostHeaderValidationResponse(web, localhostAllowedHostnames()) ?? originValidationResponse(web, localhostAllowedOrigins());
        await writeWebResponse(refused ?? (await mcp.fetch(web)), response);
      })().catch((error: unknown) => {
        if (!response.headersSent) response.writeHead(500, { 'content-type': 'text/plain' });
        response.end(String(error));
      });
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: async () => {
      for (const aborted of sockets) aborted.abort();
      await mcp.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
