import { Injectable } from '@nestjs/common';
import { ANONYMOUS_PRINCIPAL } from '../core/auth/access-token.service';
import { Character, CharacterCatalogueService } from '../assistant/roleplay/character-catalogue.service';
import { SessionService } from '../assistant/session/session.service';
import type { ToolCallContext } from '../core/tools/tool-definition';
import { BuiltinTool } from '../core/tools/tool.decorator';
import { ToolError } from '../core/tools/tool-error';
import { callerSession } from './language.tools';

const SESSION_ID = {
  type: 'string',
  description: 'The conversation to act on; the current one when omitted',
} as const;

const describe = (character: Character) => ({
  name: character.name,
  display_name: character.display_name ?? character.name,
  description: character.description,
});

/**
 * The LLM gateway spec's role-play tools (7.2): a session plays one character at a time, taken
 * from the characters file, applied to the system prompt. `session_id` lets a caller act on
 * another of its own sessions (from MCP, say); only the session's owner may.
 */
@Injectable()
export class RoleplayTools {
  constructor(
    private readonly sessions: SessionService,
    private readonly characters: CharacterCatalogueService,
  ) {}

  @BuiltinTool({
    name: 'enter_roleplay_mode',
    description: 'Start playing a character (see list_available_characters) for the rest of the conversation.',
    inputSchema: {
      type: 'object',
      properties: { character: { type: 'string', description: 'Character name' }, session_id: SESSION_ID },
      required: ['character'],
      additionalProperties: false,
    },
    tags: ['session', 'roleplay'],
  })
  async enter({ character, session_id }: { character: string; session_id?: string }, context: ToolCallContext) {
    const found = this.characters.find(character);
    if (!found) {
      throw new ToolError(
        `No character called "${character}". Available: ${this.characters
          .list()
          .map((c) => c.name)
          .join(', ')}`,
      );
    }
    const id = await this.target(session_id, context);
    await this.sessions.configure(id, { character: found.name });
    return { roleplay: true, character: describe(found), session_id: id };
  }

  @BuiltinTool({
    name: 'exit_roleplay_mode',
    description: 'Stop playing a character and answer as the assistant again.',
    inputSchema: { type: 'object', properties: { session_id: SESSION_ID }, additionalProperties: false },
    tags: ['session', 'roleplay'],
  })
  async exit({ session_id }: { session_id?: string }, context: ToolCallContext) {
    const id = await this.target(session_id, context);
    const before = await this.sessions.require(id);
    await this.sessions.configure(id, { character: undefined });
    return { roleplay: false, previous_character: before.settings.character ?? null, session_id: id };
  }

  @BuiltinTool({
    name: 'get_roleplay_status',
    description: 'Tell whether a character is being played, and which.',
    inputSchema: { type: 'object', properties: { session_id: SESSION_ID }, additionalProperties: false },
    tags: ['session', 'roleplay'],
  })
  async status({ session_id }: { session_id?: string }, context: ToolCallContext) {
    const id = await this.target(session_id, context);
    const { settings } = await this.sessions.require(id);
    const character = settings.character ? this.characters.find(settings.character) : undefined;
    return { roleplay: character !== undefined, character: character ? describe(character) : null, session_id: id };
  }

  @BuiltinTool({
    name: 'list_available_characters',
    description: 'List the characters the assistant can play.',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    tags: ['roleplay'],
  })
  list() {
    return { characters: this.characters.list().map(describe) };
  }

  private async target(sessionId: string | undefined, context: ToolCallContext): Promise<string> {
    if (sessionId === undefined || sessionId === context.sessionId) return callerSession(context);
    try {
      return (await this.sessions.resume(sessionId, context.principal ?? ANONYMOUS_PRINCIPAL)).id;
    } catch {
      throw new ToolError(`Session "${sessionId}" does not exist, has expired, or belongs to another client`);
    }
  }
}
