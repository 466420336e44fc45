import { Inject, Injectable } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';
import { CharacterCatalogueService } from '../roleplay/character-catalogue.service';
import { LANGUAGES, SessionSettings } from '../session/session';
import { zonedTime } from '../../core/time/clock';

/** The LLM gateway spec's default system prompt (14.1). */
export const DEFAULT_SYSTEM_PROMPT = `你是一个名为"听语AI"的语音助手。请遵循以下准则：

1. 回复简洁明了，适合语音播报
2. 避免使用表情符号、特殊符号（如★☆◆◇●■□等）
3. 不要使用Markdown格式（如**加粗**、*斜体*）
4. 使用自然口语化表达
5. 信息准确，如有不确定请说明

当前时间：{current_time}`;

/**
 * The system message of every model call: the configured prompt (the spec's by default) with
 * the current time filled in, then the session's response language and role-play character.
 */
@Injectable()
export class SystemPromptService {
  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    private readonly characters: CharacterCatalogueService,
  ) {}

  /** The time as the prompt says it, for the second it was read in: turns in the same second share it. */
  private clock?: { second: number; text: string };

  build(settings: SessionSettings, now = new Date()): string {
    const currentTime = this.currentTime(now);
    const parts = [(this.config.llm.systemPrompt ?? DEFAULT_SYSTEM_PROMPT).replaceAll('{current_time}', currentTime)];
    if (settings.language) {
      const language = LANGUAGES[settings.language];
      parts.push(`Always answer in ${language.name} (${language.native}), whatever language the user speaks.`);
    }
    const character = settings.character ? this.characters.find(settings.character) : undefined;
    if (character) {
      parts.push(
        `Role-play: you are ${character.display_name ?? character.name}. ${character.prompt} ` +
          'Stay in character until asked to stop, and keep following the rules above.',
      );
    }
    return parts.join('\n\n');
  }

  private currentTime(now: Date): string {
    const second = Math.floor(now.getTime() / 1000);
    if (this.clock?.second !== second) {
      const time = zonedTime(now, this.config.tools.defaultTimezone);
      this.clock = { second, text: `${time.date} ${time.time} ${time.weekday} (${time.timezone}, UTC${time.utc_offset})` };
    }
    return this.clock.text;
  }
}
