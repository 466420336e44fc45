import { GatewayError, GatewayErrorCode } from '../errors/gateway-error';

/** Why the dispatcher refused a frame before any handler saw it. */
export type RejectionReason = 'malformed' | 'untyped' | 'unknown-type' | 'too-large' | 'unauthenticated' | 'invalid';

const CODE: Record<RejectionReason, GatewayErrorCode> = {
  malformed: GatewayErrorCode.INVALID_MESSAGE,
  untyped: GatewayErrorCode.INVALID_MESSAGE,
  'unknown-type': GatewayErrorCode.UNKNOWN_MESSAGE_TYPE,
  'too-large': GatewayErrorCode.PAYLOAD_TOO_LARGE,
  unauthenticated: GatewayErrorCode.UNAUTHORIZED,
  invalid: GatewayErrorCode.INVALID_MESSAGE,
};

/**
 * A frame the dispatcher refused, with the reason, so each protocol's error mapping can word it
 * in its own vocabulary (a JSON-RPC parse error for `malformed`...) and otherwise treat it as
 * the {@link GatewayError} it is.
 */
export class FrameRejection extends GatewayError {
  constructor(
    readonly reason: RejectionReason,
    message: string,
    /** For `unknown-type`: the type the frame named. */
    readonly frameType?: string,
  ) {
    super(CODE[reason], message);
    this.name = 'FrameRejection';
  }
}
