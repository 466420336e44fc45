import { Inject, Injectable, Optional } from '@nestjs/common';
import { LlmService } from '../assistant/llm/llm.service';
import { SystemPromptService } from '../assistant/llm/system-prompt.service';
import type { Session } from '../assistant/session/session';
import { SessionService } from '../assistant/session/session.service';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { AuditService } from '../core/audit/audit.service';
import { AccessTokenService } from '../core/auth/access-token.service';
import { BudgetService } from '../core/budgets/budget.service';
import { RateLimitService } from '../core/limits/rate-limit.service';
import { ToolCallService } from '../core/tools/tool-call.service';
import { ToolRegistryService } from '../core/tools/tool-registry.service';
import { TracingService } from '../core/tracing/tracing.service';
import { MetricsService } from '../metrics/metrics.service';
import { SessionBindingService } from './session-binding.service';

/** A turn's system prompt: the one it starts with, and a new one when a tool changed the session's settings meanwhile. */
export interface TurnSystemPrompt {
  readonly current: string;
  /** The prompt from now on, if a tool changed the settings since it was last built; `undefined` otherwise. */
  ifChanged(): Promise<string | undefined>;
}

/**
 * What every turn works with, made once and shared by every turn of every connection: the model,
 * sessions, the catalogue and its calls, auth and limits, and the audit, traces and metrics. A
 * `Turn` holds its own state; this holds none.
 */
@Injectable()
export class TurnEnvironment {
  constructor(
    readonly llm: LlmService,
    readonly sessions: SessionService,
    readonly binding: SessionBindingService,
    readonly registry: ToolRegistryService,
    readonly tools: ToolCallService,
    @Inject(GATEWAY_CONFIG) readonly config: GatewayConfig,
    readonly audit: AuditService,
    readonly tracing: TracingService,
    readonly tokens: AccessTokenService,
    readonly limits: RateLimitService,
    private readonly prompts: SystemPromptService,
    readonly budgets: BudgetService,
    @Optional() readonly metrics?: MetricsService,
  ) {}

  /** The system prompt of a turn in `session`: built once, and again only if a tool changed the session's settings (the language). */
  systemPrompt(session: Session): TurnSystemPrompt {
    let revision = this.sessions.revision(session.id);
    const current = this.prompts.build(session.settings);
    return {
      current,
      ifChanged: async () => {
        const now = this.sessions.revision(session.id);
        if (now === revision) return undefined;
        revision = now;
        return this.prompts.build((await this.sessions.require(session.id)).settings);
      },
    };
  }
}
