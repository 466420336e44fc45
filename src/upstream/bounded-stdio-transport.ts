import { deserializeMessage, JSONRPCMessage, serializeMessage, Transport } from '@modelcontextprotocol/client';
import { getDefaultEnvironment } from '@modelcontextprotocol/client/stdio';
import { ChildProcess, spawn } from 'child_process';
import { BoundedLineSplitter, OversizedLine } from './bounded-lines';
import { answeredRequestIdOfLine, DroppedMessage, oversizedAnswer } from './oversized-answer';

/** Bytes of one stderr line held for the log (which shows far less of it). */
const STDERR_LINE_BYTES = 16_384;
/** How long a child gets after its stdin is closed, then after SIGTERM, before the next step. */
const EXIT_GRACE_MS = 2000;

export interface BoundedStdioParameters {
  command: string;
  args: string[];
  /** On top of the SDK's safe default environment (`HOME`, `PATH`, `USER`...). */
  env: Record<string, string>;
  cwd?: string;
  /** Most bytes one message from the server may be. */
  maxMessageBytes: number;
  /** A message over the bound was dropped (and the call it answered failed, when it could be told). */
  onDropped(message: DroppedMessage): void;
  onStderrLine(line: string): void;
}

/** Resolves once `exited` does or `ms` have passed, leaving no timer behind. */
async function exitWithin(exited: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise((resolve) => (timer = setTimeout(resolve, ms)));
  await Promise.race([exited, waited]).finally(() => clearTimeout(timer));
}

const running = (child: ChildProcess): boolean => child.exitCode === null && child.signalCode === null;

/**
 * An MCP client transport over a child's stdin and stdout, as the SDK's `StdioClientTransport`
 * (same environment rule, same ending: stdin closed, then SIGTERM, then SIGKILL), except for
 * what it does with a message over the bound: the SDK's transport takes a line past its buffer
 * for a broken stream and closes the child, which withdraws every tool of the upstream for one
 * large answer. Here the line is read through without being held, and the call it answered
 * ends in an error naming the bound; the child and its other calls go on.
 */
export class BoundedStdioClientTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private child?: ChildProcess;
  private readonly messages: BoundedLineSplitter;

  constructor(private readonly params: BoundedStdioParameters) {
    this.messages = new BoundedLineSplitter(
      params.maxMessageBytes,
      (line) => this.receive(line),
      (line) => this.drop(line),
    );
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /**
   * Never handed out (stderr is read here, line by line), but there: with `pid`, it is how the
   * SDK's version negotiation tells a stdio transport, on which a server silent to the
   * `server/discover` probe is a 2025 server, not an outage.
   */
  get stderr(): null {
    return null;
  }

  start(): Promise<void> {
    if (this.child) return Promise.reject(new Error('The stdio transport is already started'));
    const { command, args, env, cwd, onStderrLine } = this.params;
    return new Promise((resolve, reject) => {
      const child = spawn(command, args, {
        env: { ...getDefaultEnvironment(), ...env },
        stdio: ['pipe', 'pipe', 'pipe'],
        shell: false,
        windowsHide: true,
        cwd,
      });
      this.child = child;
      child.on('error', (error) => {
        reject(error);
        this.onerror?.(error);
      });
      child.on('spawn', () => resolve());
      child.on('close', () => {
        if (this.child === child) this.child = undefined;
        this.onclose?.();
      });
      child.stdin!.on('error', (error) => this.onerror?.(error));
      child.stdout!.on('data', (chunk: Buffer) => this.messages.push(chunk));
      child.stdout!.on('error', (error) => this.onerror?.(error));
      const stderr = new BoundedLineSplitter(
        STDERR_LINE_BYTES,
        (line) => onStderrLine(line.toString('utf8')),
        (line) => onStderrLine(line.head.toString('utf8')),
      );
      child.stderr!.on('data', (chunk: Buffer) => stderr.push(chunk));
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      const stdin = this.child?.stdin;
      if (!stdin) return reject(new Error('Not connected'));
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once('drain', resolve);
    });
  }

  async close(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (child) {
      const exited = new Promise((resolve) => child.once('close', resolve));
      child.stdin?.end();
      await exitWithin(exited, EXIT_GRACE_MS);
      if (running(child)) {
        child.kill('SIGTERM');
        await exitWithin(exited, EXIT_GRACE_MS);
      }
      if (running(child)) child.kill('SIGKILL');
    }
    this.messages.clear();
  }

  private receive(line: Buffer): void {
    const text = line.toString('utf8').replace(/\r$/, '');
    if (text.trim() !== '') this.deliver(() => deserializeMessage(text));
  }

  private drop(line: OversizedLine): void {
    const id = answeredRequestIdOfLine(line);
    const answer = { maxBytes: this.params.maxMessageBytes, bytes: line.bytes };
    this.params.onDropped({ ...answer, id });
    if (id !== undefined) this.deliver(() => oversizedAnswer(id, answer));
  }

  /** Hands a message to the client; a line that is no message, or a handler that throws, is an error of the stream's, not a crash. */
  private deliver(message: () => JSONRPCMessage): void {
    try {
      this.onmessage?.(message());
    } catch (error) {
      this.onerror?.(error as Error);
    }
  }
}
