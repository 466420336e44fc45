import { GatewayError, GatewayErrorCode } from '../errors/gateway-error';

/**
 * A token that authenticated but may not do this (its tokens-file entry says no): `FORBIDDEN`
 * on every protocol, the LLM gateway included, where a bad frame's INVALID_MESSAGE would send
 * the device's developer looking in the wrong place.
 */
export class AccessDeniedError extends GatewayError {
  constructor(message: string) {
    super(GatewayErrorCode.FORBIDDEN, message);
    this.name = 'AccessDeniedError';
  }
}
