import { Injectable } from '@nestjs/common';
import { RateLimitService } from '../limits/rate-limit.service';
import { isPromise, MaybePromise } from '../maybe-promise';
import type { ToolOutcome } from './tool-definition';
import type { PreparedToolCall, ToolCallControls } from './tool-invoker';
import type { ToolCallScope } from './tool-call-scope';
import { ToolRegistryService } from './tool-registry.service';

/**
 * Where every protocol runs a tool call, within the call's {@link ToolCallScope}: a place among
 * the connection's calls in flight, then the token's `tool_calls_per_minute`, then the catalogue's
 * invoker with the scope's principal, connection, signal and protocol. What that decides is
 * written here once, so no protocol can leave a part out.
 *
 * Nothing here waits unless something has to: a synchronous tool called by a token without a
 * limit (or with in-memory counters) answers at once, with no promise.
 */
@Injectable()
export class ToolCallService {
  constructor(
    private readonly registry: ToolRegistryService,
    private readonly limits: RateLimitService,
  ) {}

  /**
   * Looks `name` up as the scope sees the catalogue (its connection's own tools, the shared tools
   * its principal's grant allows) and checks `args`, once: for a caller that decides something
   * before it runs the call (MCP answers an unknown tool as a protocol error; the LLM gateway
   * sends device calls out).
   */
  prepare(scope: ToolCallScope, name: string, args: unknown): PreparedToolCall {
    return this.registry.prepare(name, args, scope.connectionId, scope.principal, scope.audience);
  }

  /**
   * Runs a {@link prepare}d call within `scope`; `controls` hears a streaming tool's pieces and
   * can cancel the call. Its outcome at once when nothing had to wait. A call the scope's bounds
   * refuse is thrown (or rejected with) as `TooManyCallsError` or `RateLimitedError`, which each
   * protocol's errors file words; anything past them ends in a {@link ToolOutcome}.
   */
  run(scope: ToolCallScope, prepared: PreparedToolCall, controls?: ToolCallControls): MaybePromise<ToolOutcome> {
    const slots = scope.callsInFlight;
    return slots ? slots.run(() => this.admitted(scope, prepared, controls)) : this.admitted(scope, prepared, controls);
  }

  /** {@link prepare} and {@link run} in one. */
  call(scope: ToolCallScope, name: string, args: unknown, controls?: ToolCallControls): MaybePromise<ToolOutcome> {
    return this.run(scope, this.prepare(scope, name, args), controls);
  }

  private admitted(scope: ToolCallScope, prepared: PreparedToolCall, controls: ToolCallControls | undefined): MaybePromise<ToolOutcome> {
    const admission = scope.rateLimited ? this.limits.admitToolCall(scope.principal) : undefined;
    if (isPromise(admission)) return admission.then(() => this.registry.run(prepared, scope, controls));
    return this.registry.run(prepared, scope, controls);
  }
}
