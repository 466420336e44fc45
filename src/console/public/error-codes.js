/**
 * What each error code means to someone at the console, with what to check. The gateway's codes
 * are those of the LLM gateway spec (docs/llm-gateway.md, "Errors"); the client's are the SDK's own.
 * @type {Record<string, string>}
 */
const MEANINGS = {
  INVALID_MESSAGE: 'The gateway could not read a request: not JSON, a missing or invalid field, or an unknown or expired call_id.',
  UNKNOWN_MESSAGE_TYPE: 'The request has a type the protocol does not define.',
  SESSION_ERROR: 'The session does not exist, has expired or belongs to another token, or the session store failed.',
  LLM_ERROR: 'The model server failed (an HTTP error, unreachable, a broken stream): check LLM_BASE_URL and the model server.',
  TIMEOUT: 'The model did not answer within LLM_TIMEOUT.',
  TOOL_RESULT_TIMEOUT: 'A device tool did not answer within CLIENT_TOOL_TIMEOUT, so the turn ended.',
  TOOL_REGISTRATION_FAILED: 'The tool was refused: a name against the rule or already taken, too many tools, or client tools turned off.',
  INVALID_TOOL_PARAMETERS: "The schema is not a JSON Schema of an object, or the arguments break the tool's schema.",
  TOOL_NOT_FOUND: 'The model called a tool that does not exist.',
  TOOL_EXECUTION_FAILED: 'The tool ran and failed, or ran past its time limit; the model was told why.',
  INTERNAL_ERROR: 'Something unexpected failed in the gateway; its log has the details.',
  UNAUTHORIZED: 'The gateway needs a token: enter one of its AUTH_TOKENS.',
  FORBIDDEN: 'The gateway refused this token, or the token may not do this (AUTH_TOKENS_FILE).',
  NOT_FOUND: 'The gateway has nothing at that path.',
  TOOL_UNAVAILABLE: "The tool's upstream server cannot be reached right now.",
  TOOL_TIMEOUT: 'The tool ran past its time limit.',
  RATE_LIMITED: "This token's rate limit (AUTH_TOKENS_FILE) is spent: wait details.retry_after_s seconds.",
  PAYLOAD_TOO_LARGE: "The request is over the gateway's size limit (for a push to a device, FLEET_PUSH_MAX_CHARS characters).",
  DEVICE_OFFLINE: 'The device is not connected, or this token may not reach it: it may have left since the list was read.',
  DEVICE_BUSY: 'The device has too many pushes waiting or held for it: try again once it has spoken them.',
  DEVICE_ID_TAKEN: 'The device id belongs to another token (or, to be released, the device must be offline).',
  CONNECT_FAILED: 'No connection: the gateway is unreachable, refused the token, or gave no session.',
  NOT_CONNECTED: 'Connect first.',
  CONNECTION_LOST: 'The connection dropped while the request was on its way; it may or may not have run.',
  RECONNECT_FAILED: 'The connection dropped and could not be restored.',
  CLIENT_CLOSED: 'The connection was closed.',
  PING_TIMEOUT: 'No pong came back in time.',
  NO_ANSWER: 'The turn ended without an answer.',
  INVALID_INPUT: 'The console refused the value before sending it.',
};

/**
 * What a code means when the console called a tool itself (the catalogue's form): no model is
 * involved, so nothing was "told" to one, and the arguments are the reader's own.
 * @type {Record<string, string>}
 */
const DIRECT_CALL_MEANINGS = {
  TOOL_EXECUTION_FAILED: 'The tool ran and failed; the message above is its own.',
  TOOL_TIMEOUT: 'The tool ran past its time limit (timeoutMs in the catalogue) and was stopped.',
  TOOL_NOT_FOUND: 'The gateway has no tool by that name any more: refresh the catalogue.',
  INVALID_TOOL_PARAMETERS: "The arguments break the tool's input schema (shown above): fix them and call again.",
};

/**
 * @param {string} code
 * @param {'turn' | 'direct'} [during] a model's turn (the chat), or a call the console made itself
 */
export const meaningOf = (code, during = 'turn') => (during === 'direct' ? DIRECT_CALL_MEANINGS[code] : undefined) ?? MEANINGS[code] ?? '';
