import { Module } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { GatewayState } from '../core/state/gateway-state';
import { LlmService } from './llm/llm.service';
import { SystemPromptService } from './llm/system-prompt.service';
import { CharacterCatalogueService } from './roleplay/character-catalogue.service';
import { MemorySessionStore } from './session/memory-session.store';
import { RedisSessionPresence } from './session/redis-session-presence';
import { RedisSessionStore } from './session/redis-session.store';
import { LocalSessionPresence, SESSION_PRESENCE, SessionPresence } from './session/session-presence';
import { SESSION_STORE, SessionStore } from './session/session-store';
import { isCapped, SessionService } from './session/session.service';

/**
 * The voice assistant's domain: sessions (in memory, or in Redis when instances share it), the
 * model conversation and its system prompt, role-play characters. The LLM gateway and the
 * built-in tools import it; no other protocol does.
 */
@Module({
  providers: [
    {
      provide: SESSION_STORE,
      inject: [GatewayState, GATEWAY_CONFIG],
      useFactory: (state: GatewayState, { session }: GatewayConfig) =>
        state.choose<SessionStore | Promise<SessionStore>>({
          memory: () => new MemorySessionStore(session.timeoutMs, Date.now, (owner) => isCapped(owner, session.maxPerPrincipal)),
          redis: (redis) => RedisSessionStore.connect(redis, session.timeoutMs),
        }),
    },
    {
      provide: SESSION_PRESENCE,
      inject: [GatewayState],
      useFactory: (state: GatewayState) =>
        state.choose<SessionPresence | Promise<SessionPresence>>({
          memory: () => new LocalSessionPresence(),
          redis: (redis) => RedisSessionPresence.connect(redis),
        }),
    },
    SessionService,
    LlmService,
    SystemPromptService,
    CharacterCatalogueService,
  ],
  exports: [SESSION_STORE, SessionService, LlmService, SystemPromptService, CharacterCatalogueService],
})
export class AssistantModule {}
