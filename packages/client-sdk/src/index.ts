export { CLOSE_REPLACED, LlmGatewayClient } from './client.js';
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
export type { TurnAnswer, TurnCallbacks } from './requests.js';
export type { PushedAnswer, PushFields, PushSentence } from './push.js';
export type { ClientTool, ToolCallContext, ToolHandler, ToolRegistrationDefinition, ToolVisibility } from './tools.js';
export type { WebSocketConstructor, WebSocketLike } from './websocket.js';
export * from './protocol/index.js';
