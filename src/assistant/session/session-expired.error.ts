import { GatewayError, GatewayErrorCode } from '../../core/errors/gateway-error';

/**
 * SESSION_ERROR for a session the store no longer has (it expired, was forgotten at its token's
 * cap, or the store lost its data), as opposed to a store that fails: a connection whose own
 * session is gone moves on to a new one instead of failing every request.
 */
export class SessionExpiredError extends GatewayError {
  constructor(readonly sessionId: string) {
    super(GatewayErrorCode.SESSION_ERROR, `Session "${sessionId}" has expired`);
    this.name = 'SessionExpiredError';
  }
}
