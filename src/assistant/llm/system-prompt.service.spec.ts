import { mkdtempSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { loadGatewayConfig } from '../../config/gateway-config';
import { CharacterCatalogueService } from '../roleplay/character-catalogue.service';
import { DEFAULT_SYSTEM_PROMPT, SystemPromptService } from './system-prompt.service';

describe('SystemPromptService', () => {
  const moment = new Date('2026-11-21T10:30:05Z');
  const settings = { temperature: 0.7, maxTokens: 100, enableContext: false };
  const service = (overrides: Record<string, string> = {}) => {
    const config = loadGatewayConfig({ DEFAULT_TIMEZONE: 'Asia/Shanghai', ...overrides });
    const characters = new CharacterCatalogueService(config);
    characters.onModuleInit();
    return new SystemPromptService(config, characters);
  };

  it("fills the spec's prompt with the current time", () => {
    expect(service().build(settings, moment)).toBe(DEFAULT_SYSTEM_PROMPT.replace('{current_time}', '2026-11-21 18:30:05 Saturday (Asia/Shanghai, UTC+08:00)'));
  });

  it("adds the session's language and character", () => {
    const prompt = service().build({ ...settings, language: 'en', character: 'pirate_captain' }, moment);
    expect(prompt).toContain('Always answer in English (English), whatever language the user speaks.');
    expect(prompt).toContain('Role-play: you are Captain Redbeard.');
  });

  it('ignores a character that left the file', () => {
    expect(service().build({ ...settings, character: 'nobody' }, moment)).not.toContain('Role-play');
  });

  it('takes the prompt from LLM_SYSTEM_PROMPT or LLM_SYSTEM_PROMPT_FILE', () => {
    expect(service({ LLM_SYSTEM_PROMPT: 'Be brief. Time: {current_time}' }).build(settings, moment)).toBe(
      'Be brief. Time: 2026-11-21 18:30:05 Saturday (Asia/Shanghai, UTC+08:00)',
    );
    const file = join(mkdtempSync(join(tmpdir(), 'prompt-')), 'prompt.txt');
    writeFileSync(file, 'From a file');
    expect(service({ LLM_SYSTEM_PROMPT_FILE: file }).build(settings, moment)).toBe('From a file');
    expect(() => service({ LLM_SYSTEM_PROMPT_FILE: `${file}.missing` })).toThrow(/LLM_SYSTEM_PROMPT_FILE cannot be read/);
    expect(() => service({ LLM_SYSTEM_PROMPT: 'a', LLM_SYSTEM_PROMPT_FILE: file })).toThrow(/not both/);
  });
});
