import { WebSocket } from 'ws';

/**
 * A LiteMCP client written from the spec (LiteMCP 1.0 over WebSocket and its data structures),
 * not from the gateway's code: IOBasic frames with a random unique id, answers
 * matched by id, the token in `Authorization: Bearer`.
 */
export class LiteMcpClient {
  private readonly pending = new Map<number, (frame: any) => void>();
  private readonly used = new Set<number>();

  private constructor(private readonly socket: WebSocket) {
    socket.on('message', (data) => {
      const frame = JSON.parse(data.toString());
      this.pending.get(frame.id)?.(frame);
      this.pending.delete(frame.id);
    });
  }

  static connect(url: string, token?: string): Promise<LiteMcpClient> {
    const socket = new WebSocket(url, { headers: token ? { Authorization: `Bearer ${token}` } : {} });
    return new Promise((resolve, reject) => {
      socket.once('open', () => resolve(new LiteMcpClient(socket)));
      socket.once('error', reject);
    });
  }

  private request(type: 'get' | 'call', data: unknown): Promise<any> {
    let id: number;
    do id = Math.floor(Math.random() * 2 ** 31);
    while (this.used.has(id));
    this.used.add(id);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`No answer to request ${id}`)), 5000);
      this.pending.set(id, (frame) => {
        clearTimeout(timer);
        resolve(frame);
      });
      this.socket.send(JSON.stringify({ version: [1, 0, 0], id, type, data }));
    });
  }

  /** The endpoint's Tool. */
  async info(): Promise<any> {
    const frame = await this.request('get', {});
    if (frame.type !== 'info') throw new Error(`Expected info, got ${JSON.stringify(frame)}`);
    return frame.data;
  }

  /** Calls the tool with positional string arguments; the CallResult. */
  async call(tool: string, args: string[]): Promise<any> {
    const frame = await this.request('call', { version: [1, 0, 0], tool, arguments: args });
    if (frame.type !== 'result') throw new Error(`Expected result, got ${JSON.stringify(frame)}`);
    return frame.data;
  }

  close(): void {
    this.socket.close();
  }
}
