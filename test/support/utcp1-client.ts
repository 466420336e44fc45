import { TestSocket } from './test-socket';

/** A UTCP 1.x websocket call template, as the Python `utcp-websocket` plugin reads it. */
export interface WebSocketCallTemplate {
  call_template_type: 'websocket';
  name?: string;
  url: string;
  message?: string | Record<string, unknown>;
  protocol?: string;
  response_format?: 'json' | 'text' | 'raw';
  /** Seconds. */
  timeout?: number;
  headers?: Record<string, string>;
  auth?: { auth_type: 'api_key'; api_key: string; var_name?: string; location?: 'header' | 'query' | 'cookie' };
}

export interface ManualTool {
  name: string;
  description?: string;
  inputs?: unknown;
  outputs?: unknown;
  tags?: string[];
  tool_call_template: WebSocketCallTemplate;
}

/** This client caps every wait at this many ms, so a broken test fails fast whatever a template says. */
const MAX_WAIT_MS = 10_000;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * A client that behaves like the UTCP 1.x Python client with its `utcp-websocket` plugin, written
 * from that plugin's published behaviour rather than from the gateway's code:
 * - `registerManual` sends the text `{"type": "utcp"}` and takes the first frame that is a manual
 *   (a JSON object with `tools`), prefixing each tool's name with the manual's name;
 * - `callTool` sends the template's `message` with `UTCP_ARG_<name>_UTCP_ARG` placeholders filled
 *   in, or with no message just the arguments as JSON, and returns the first frame received
 *   (parsed when `response_format` is `json`);
 * - `callToolStreaming` yields `tool_response` results until `stream_end`, throws on `tool_error`,
 *   and yields any other frame as it came;
 * - templates have `${VAR}` replaced from variables namespaced by the manual's name, carry
 *   `api_key` auth as a handshake header, must be `wss://` or local `ws://`, and share one pooled
 *   connection per template name and URL.
 */
export class Utcp1WebSocketClient {
  private readonly tools = new Map<string, ManualTool>();
  private readonly connections = new Map<string, TestSocket>();

  constructor(private readonly variables: Record<string, string> = {}) {}

  async registerManual(template: WebSocketCallTemplate & { name: string }): Promise<ManualTool[]> {
    const manualName = template.name.replace(/\W/g, '_');
    const resolved = this.substitute({ ...template, name: manualName }, manualName);
    const next = await this.send(resolved, JSON.stringify({ type: 'utcp' }));
    for (;;) {
      const { json } = await next();
      if (!isObject(json) || !('tools' in json)) continue;
      const tools = (json.tools as ManualTool[]).map((tool) => ({
        ...tool,
        name: tool.name.startsWith(`${manualName}.`) ? tool.name : `${manualName}.${tool.name}`,
      }));
      tools.forEach((tool) => this.tools.set(tool.name, tool));
      return tools;
    }
  }

  /** Adds tools from a manual read elsewhere (a file, a hand-written template). */
  registerTools(manualName: string, tools: ManualTool[]): void {
    tools.forEach((tool) => this.tools.set(`${manualName}.${tool.name}`, { ...tool, name: `${manualName}.${tool.name}` }));
  }

  async callTool(name: string, args: Record<string, unknown>): Promise<unknown> {
    const template = this.templateOf(name);
    const { text, json } = await (await this.send(template, formatMessage(template, args)))();
    return template.response_format === 'json' && json !== undefined ? json : text;
  }

  async *callToolStreaming(name: string, args: Record<string, unknown>): AsyncGenerator<unknown> {
    const template = this.templateOf(name);
    const next = await this.send(template, formatMessage(template, args));
    for (;;) {
      const { text, json } = await next();
      if (!isObject(json)) yield text;
      else if (json.type === 'tool_response') yield json.result;
      else if (json.type === 'tool_error') throw new Error(`Tool ${name} failed: ${String(json.error ?? 'Unknown error')}`);
      else if (json.type === 'stream_end') return;
      else yield text;
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.connections.values()].map((socket) => socket.close()));
    this.connections.clear();
  }

  private templateOf(name: string): WebSocketCallTemplate {
    const tool = this.tools.get(name);
    if (!tool) throw new Error(`Tool not found: ${name}`);
    return this.substitute(tool.tool_call_template, name.split('.')[0]);
  }

  /** Sends `message` on the template's connection; then reads the frames back, each with its JSON value if it has one. */
  private async send(template: WebSocketCallTemplate, message: string): Promise<() => Promise<{ text: string; json: unknown }>> {
    const socket = await this.connection(template);
    socket.send(message);
    const deadline = Date.now() + Math.min((template.timeout ?? 30) * 1000, MAX_WAIT_MS);
    return async () => {
      const text = await socket.nextText(Math.max(1, deadline - Date.now()));
      try {
        return { text, json: JSON.parse(text) as unknown };
      } catch {
        return { text, json: undefined };
      }
    };
  }

  private async connection(template: WebSocketCallTemplate): Promise<TestSocket> {
    const { url } = template;
    if (!/^(wss:\/\/|ws:\/\/localhost|ws:\/\/127\.0\.0\.1)/.test(url)) {
      throw new Error(`WebSocket URL must use wss:// or start with ws://localhost or ws://127.0.0.1. Got: ${url}`);
    }
    const key = `${template.name}_${url}`;
    const pooled = this.connections.get(key);
    if (pooled && pooled.socket.readyState === pooled.socket.OPEN) return pooled;
    const headers = { ...template.headers };
    if (template.auth?.auth_type === 'api_key' && (template.auth.location ?? 'header') === 'header') {
      headers[template.auth.var_name ?? 'X-Api-Key'] = template.auth.api_key;
    }
    const socket = await TestSocket.open(url, { headers, protocols: template.protocol ? [template.protocol] : undefined });
    this.connections.set(key, socket);
    return socket;
  }

  /** `${VAR}` and `$VAR` in every string of the template, from variables namespaced by the manual. */
  private substitute<T>(value: T, namespace: string): T {
    if (typeof value === 'string') {
      return value.replace(/\$\{(\w+)\}|\$(\w+)/g, (_match, braced: string | undefined, bare: string | undefined) => {
        const key = `${namespace.replace(/_/g, '__')}_${braced ?? bare}`;
        const found = this.variables[key];
        if (found === undefined) throw new Error(`Variable ${key} referenced in provider configuration not found`);
        return found;
      }) as T;
    }
    if (Array.isArray(value)) return value.map((item) => this.substitute(item, namespace)) as T;
    if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, this.substitute(item, namespace)])) as T;
    return value;
  }
}

/** The plugin's message: the template with placeholders filled in, or the bare arguments. */
function formatMessage(template: WebSocketCallTemplate, args: Record<string, unknown>): string {
  if (template.message === undefined) return JSON.stringify(args);
  const fill = (value: unknown): unknown => {
    if (typeof value === 'string') {
      return Object.entries(args).reduce(
        (text, [name, arg]) => text.split(`UTCP_ARG_${name}_UTCP_ARG`).join(typeof arg === 'string' ? arg : JSON.stringify(arg)),
        value,
      );
    }
    if (Array.isArray(value)) return value.map(fill);
    if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, fill(item)]));
    return value;
  };
  const filled = fill(template.message);
  return typeof filled === 'string' ? filled : JSON.stringify(filled);
}
