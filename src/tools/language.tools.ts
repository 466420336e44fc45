import { Injectable } from '@nestjs/common';
import { LANGUAGE_CODES, LANGUAGES, LanguageCode } from '../assistant/session/session';
import { SessionService } from '../assistant/session/session.service';
import type { ToolCallContext } from '../core/tools/tool-definition';
import { BuiltinTool } from '../core/tools/tool.decorator';
import { ToolError } from '../core/tools/tool-error';

/** The session a session tool acts on: the caller's own LLM-gateway session. */
export function callerSession(context: ToolCallContext): string {
  if (!context.sessionId) throw new ToolError('This tool works inside an LLM-gateway conversation');
  return context.sessionId;
}

const describe = (code: LanguageCode) => ({ code, name: LANGUAGES[code].name, native_name: LANGUAGES[code].native });

/** The LLM gateway spec's response-language tools (7.2): per session, applied to the system prompt. */
@Injectable()
export class LanguageTools {
  constructor(private readonly sessions: SessionService) {}

  @BuiltinTool({
    name: 'set_response_language',
    description: 'Set the language the assistant answers in for the rest of this conversation.',
    inputSchema: {
      type: 'object',
      properties: { language: { type: 'string', enum: LANGUAGE_CODES, description: 'Language code' } },
      required: ['language'],
      additionalProperties: false,
    },
    tags: ['session', 'language'],
  })
  async setResponseLanguage({ language }: { language: LanguageCode }, context: ToolCallContext) {
    await this.sessions.configure(callerSession(context), { language });
    return { language: describe(language), status: 'set' };
  }

  @BuiltinTool({
    name: 'get_response_language',
    description: 'Get the language the assistant answers in, if one was set.',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    tags: ['session', 'language'],
  })
  async getResponseLanguage(_args: Record<string, never>, context: ToolCallContext) {
    const { settings } = await this.sessions.require(callerSession(context));
    return { language: settings.language ? describe(settings.language) : null };
  }

  @BuiltinTool({
    name: 'list_supported_languages',
    description: 'List the languages the assistant can be set to answer in.',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    tags: ['language'],
  })
  listSupportedLanguages() {
    return { languages: LANGUAGE_CODES.map(describe) };
  }
}
