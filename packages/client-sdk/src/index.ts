export { LlmGatewayClient } from './client.js';
export type {
  ConnectionState,
  FrameLogEntry,
  LlmGatewayClientEvents,
  LlmGatewayClientOptions,
  SessionChange,
  SessionChangeReason,
} from './client.js';
export { LlmGatewayError } from './errors.js';
export type { ClientErrorCode } from './errors.js';
export { DEFAULT_RECONNECT } from './backoff.js';
export type { ReconnectOptions } from './backoff.js';
export type { ClientTool, ToolCallContext, ToolHandler } from './tools.js';
export type { WebSocketConstructor, WebSocketLike } from './websocket.js';
export { GATEWAY_ERROR_CODES, LANGUAGE_CODES, MAX_TOKENS_CEILING, SERVER_FRAME_TYPES, parseServerFrame } from './frames.js';
export type * from './frames.js';
