import { WebSocket } from 'ws';

/* eslint-disable @typescript-eslint/no-unsafe-function-type */

/** The device tools of the spec's client examples (section 10). */
export const SPEC_BATTERY_TOOL = {
  name: 'get_battery',
  description: '获取设备当前电量百分比',
  parameters: { type: 'object', properties: {}, required: [] },
};

export const SPEC_VOLUME_TOOL = {
  name: 'set_volume',
  description: '设置设备音量',
  parameters: {
    type: 'object',
    properties: { volume: { type: 'integer', description: '音量值 0-100', minimum: 0, maximum: 100 } },
    required: ['volume'],
  },
};

/**
 * The LLM gateway spec's JavaScript client (section 10.2): callbacks in a handler map,
 * `sendText` resolving on the FIRST `llm_response`, `configure` fire-and-forget. Changed from
 * the spec, and only this:
 * - `onmessage` dispatches `tools_registered` to the handler `registerTools` installs (the two
 *   lines marked below). As written, the spec's `onmessage` only logs that frame, so its
 *   `registerTools()` never resolves and its usage example stops there. `asWritten: true`
 *   leaves the two lines out, to show that.
 * - `console.log` became `this.log`, types were added for TypeScript, and `ws` stands in for
 *   the browser's `WebSocket` (same `onopen`/`onmessage`/`onerror`/`onclose` properties).
 */
export class SpecJsClient {
  url: string;
  ws: any;
  sessionId: string | null;
  messageHandlers: Map<string, Function>;
  clientTools: Map<string, Function>;
  log: unknown[][] = [];

  constructor(
    url = 'ws://localhost:9400',
    private readonly options: { asWritten?: boolean } = {},
  ) {
    this.url = url;
    this.ws = null;
    this.sessionId = null;
    this.messageHandlers = new Map();
    this.clientTools = new Map();
  }

  connect(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.ws = new WebSocket(this.url);

      this.ws.onopen = () => {
        this.log.push(['WebSocket connected']);
      };

      this.ws.onmessage = async (event: any) => {
        const msg = JSON.parse(event.data);

        if (msg.type === 'status' && msg.status === 'connected') {
          this.sessionId = msg.data.session_id;
          this.log.push(['Session ID:', this.sessionId]);
          resolve();
        } else if (msg.type === 'llm_response') {
          const handler = this.messageHandlers.get('llm_response');
          if (handler) handler(msg);
        } else if (msg.type === 'tool_call') {
          this.log.push(['Server tool:', msg.tool_name, msg.result]);
        } else if (msg.type === 'tool_callback') {
          await this.handleToolCallback(msg);
        } else if (msg.type === 'tools_registered') {
          this.log.push([`Registered ${msg.count} tools`]);
          if (this.options.asWritten) return;
          const handler = this.messageHandlers.get('tools_registered'); // added: not in the spec
          if (handler) handler(msg); // added: not in the spec
        } else if (msg.type === 'error') {
          const handler = this.messageHandlers.get('error');
          if (handler) handler(msg);
        }
      };

      this.ws.onerror = (error: unknown) => reject(error);
      this.ws.onclose = () => this.log.push(['WebSocket closed']);
    });
  }

  async handleToolCallback(msg: any): Promise<void> {
    const { call_id, tool_name, arguments: args } = msg;
    this.log.push([`Client tool called: ${tool_name}`, args]);

    try {
      if (this.clientTools.has(tool_name)) {
        const toolFunc = this.clientTools.get(tool_name)!;
        const result = await toolFunc(args);
        this.sendToolResult(call_id, result, true);
      } else {
        this.sendToolResult(call_id, null, false, `Tool '${tool_name}' not found`);
      }
    } catch (error) {
      this.sendToolResult(call_id, null, false, (error as Error).message);
    }
  }

  sendToolResult(callId: string, result: unknown, success: boolean, error: string | null = null): void {
    const message: any = {
      type: 'tool_result',
      call_id: callId,
      success: success,
    };
    if (success) {
      message.result = result;
    } else {
      message.error = error;
    }
    this.ws.send(JSON.stringify(message));
  }

  registerTools(tools: unknown[]): Promise<any> {
    return new Promise((resolve) => {
      const request = { type: 'register_tools', tools };

      const handler = (msg: any) => {
        this.log.push([`Registered ${msg.count} tools`]);
        resolve(msg);
        this.messageHandlers.delete('tools_registered');
      };

      this.messageHandlers.set('tools_registered', handler);
      this.ws.send(JSON.stringify(request));
    });
  }

  registerTool(name: string, func: Function): void {
    this.clientTools.set(name, func);
  }

  sendText(text: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const request = {
        type: 'text_input',
        text: text,
        session_id: this.sessionId,
      };

      this.messageHandlers.set('llm_response', (msg: any) => {
        resolve(msg.content);
        this.messageHandlers.delete('llm_response');
      });

      this.messageHandlers.set('error', (msg: any) => {
        reject(new Error(`${msg.code}: ${msg.message}`));
        this.messageHandlers.delete('error');
      });

      this.ws.send(JSON.stringify(request));
    });
  }

  configure(options: object): void {
    const request = { type: 'configure', ...options };
    this.ws.send(JSON.stringify(request));
  }

  close(): void {
    this.ws.close();
  }
}

/**
 * The LLM gateway spec's Python client (section 10.1), ported line for line to drive it from
 * jest (the real one, unchanged, runs under python3: spec-python-client/): `recv()` reads the
 * next frame in order; `connect` reads exactly one frame; `register_tools` reads exactly one
 * frame and expects `tools_registered`; `send_text` loops until the first `llm_response`,
 * answering `tool_callback`s and raising on `error`; `configure` sends and reads nothing.
 */
export class SpecPythonClient {
  ws!: WebSocket;
  session_id: string | null = null;
  client_tools = new Map<string, (args: any) => unknown>();
  printed: string[] = [];
  private readonly inbox: string[] = [];
  private readonly waiting: ((text: string) => void)[] = [];

  constructor(readonly url = 'ws://localhost:9400') {}

  private print(line: string): void {
    this.printed.push(line);
  }

  private recv(): Promise<any> {
    const next = this.inbox.shift();
    if (next !== undefined) return Promise.resolve(JSON.parse(next));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('recv timed out')), 10000);
      this.waiting.push((text) => {
        clearTimeout(timer);
        resolve(JSON.parse(text));
      });
    });
  }

  async connect(): Promise<void> {
    this.ws = new WebSocket(this.url);
    this.ws.on('message', (data) => {
      const waiter = this.waiting.shift();
      if (waiter) waiter(data.toString());
      else this.inbox.push(data.toString());
    });
    await new Promise((resolve, reject) => {
      this.ws.once('open', resolve);
      this.ws.once('error', reject);
    });
    const status_msg = await this.recv();
    if (status_msg.type === 'status') {
      this.session_id = status_msg.data.session_id;
      this.print(`Connected. Session ID: ${this.session_id}`);
    }
  }

  async register_tools(tools: unknown[]): Promise<void> {
    this.ws.send(JSON.stringify({ type: 'register_tools', tools }));
    const response = await this.recv();
    if (response.type === 'tools_registered') {
      this.print(`Registered ${response.count} tools`);
      for (const tool of response.tools) {
        if (tool.status === 'registered') this.print(`  - ${tool.name}: OK`);
        else this.print(`  - ${tool.name}: FAILED - ${tool.error ?? 'Unknown error'}`);
      }
    }
  }

  define_tool(name: string, func: (args: any) => unknown): void {
    this.client_tools.set(name, func);
  }

  async send_text(text: string): Promise<string> {
    if (!this.ws) await this.connect();
    this.ws.send(JSON.stringify({ type: 'text_input', text, session_id: this.session_id }));
    for (;;) {
      const response = await this.recv();
      if (response.type === 'tool_call') {
        this.print(`Server tool called: ${response.tool_name}`);
        this.print(`Result: ${JSON.stringify(response.result)}`);
      } else if (response.type === 'tool_callback') {
        const { call_id, tool_name } = response;
        const args = response.arguments ?? {};
        this.print(`Client tool called: ${tool_name} with ${JSON.stringify(args)}`);
        try {
          if (this.client_tools.has(tool_name)) {
            const result = await this.client_tools.get(tool_name)!(args);
            this.send_tool_result(call_id, result, true);
          } else {
            this.send_tool_result(call_id, undefined, false, `Tool '${tool_name}' not found`);
          }
        } catch (error) {
          this.send_tool_result(call_id, undefined, false, String(error));
        }
      } else if (response.type === 'llm_response') {
        return response.content;
      } else if (response.type === 'error') {
        throw new Error(`${response.code}: ${response.message}`);
      }
    }
  }

  private send_tool_result(call_id: string, result: unknown = null, success = true, error?: string): void {
    const message: any = { type: 'tool_result', call_id, success };
    if (success) message.result = result;
    else message.error = error;
    this.ws.send(JSON.stringify(message));
  }

  configure(options: object): void {
    this.ws.send(JSON.stringify({ type: 'configure', ...options }));
  }

  close(): void {
    this.ws.close();
  }
}
