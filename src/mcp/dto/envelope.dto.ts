import { IsNumber, IsObject, IsOptional, IsString } from 'class-validator';
import { describeValidationErrors } from '../../core/validation/validation-message';
import { EnvelopeError, EnvelopeErrorCode } from '../websocket/envelope';
import { JsonValidationPipe } from '../../core/validation/json-validation.pipe';

/** The fields every client envelope may carry (section 2.1); `type` routed it here. */
export class EnvelopeDto {
  @IsString()
  type: string;

  /** Assigned by the server at `auth`; when a client repeats it, it must be its own. */
  @IsOptional()
  @IsString()
  sessionId?: string;

  /** Unix time in milliseconds. */
  @IsOptional()
  @IsNumber({}, { message: 'timestamp must be a number (Unix time in milliseconds)' })
  timestamp?: number;
}

/**
 * `auth`, the first message. Read by hand rather than validated: whatever is wrong with it, the
 * answer is the spec's auth failure (401) and the connection closes.
 */
export interface AuthEnvelope {
  type: 'auth';
  token?: unknown;
  clientInfo?: unknown;
}

/** `message`: one JSON-RPC message; the SDK's schema checks it once it reaches the transport. */
export class MessageEnvelopeDto extends EnvelopeDto {
  @IsObject({ message: 'payload must be a JSON-RPC 2.0 message object' })
  payload: Record<string, unknown>;
}

/** `pong`: the answer to the server's `ping`. */
export class PongEnvelopeDto extends EnvelopeDto {}

/** `close`: the client ends the session. */
export class CloseEnvelopeDto extends EnvelopeDto {
  @IsOptional()
  @IsString()
  reason?: string;
}

/** Validates client envelopes; a failure is -32600 "Invalid Request" naming every bad field. */
export const envelopeValidationPipe = new JsonValidationPipe({
  transform: true,
  forbidUnknownValues: false,
  exceptionFactory: (errors) =>
    new EnvelopeError(EnvelopeErrorCode.INVALID_REQUEST, 'Invalid Request', describeValidationErrors(errors)),
});
