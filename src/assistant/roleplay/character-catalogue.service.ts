import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { plainToInstance, Type } from 'class-transformer';
import { IsArray, IsOptional, IsString, Matches, MinLength, ValidateNested, validateSync } from 'class-validator';
import { readFileSync, statSync } from 'fs';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';
import { describeValidationErrors } from '../../core/validation/validation-message';

export class Character {
  /** What users and the model call the character by: `pirate_captain`. */
  @Matches(/^[\p{L}\p{N}_-]{1,64}$/u, { message: 'name must be 1-64 letters, digits, "_" or "-"' })
  name: string;

  @IsOptional()
  @IsString()
  display_name?: string;

  @IsString()
  @MinLength(1)
  description: string;

  /** Instructions added to the system prompt while the character is played. */
  @IsString()
  @MinLength(1)
  prompt: string;
}

class CharacterFile {
  @IsArray()
  @ValidateNested({ each: true })
  @Type(() => Character)
  characters: Character[];
}

/**
 * The role-play characters, from a JSON file users can edit (`ROLEPLAY_CHARACTERS_FILE`, the
 * shipped `data/characters.json` by default). Read at boot, where a broken file stops the start
 * with a message naming it, and read again whenever the file changes, so edits apply without a
 * restart; an edit that breaks the file keeps the last good characters.
 */
@Injectable()
export class CharacterCatalogueService implements OnModuleInit {
  private characters = new Map<string, Character>();
  private loadedVersion = -1;

  constructor(@Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig) {}

  onModuleInit(): void {
    this.reloadIfChanged(true);
  }

  list(): Character[] {
    this.reloadIfChanged(false);
    return [...this.characters.values()];
  }

  /** The character called `name` (by name or display name, case-insensitively). */
  find(name: string): Character | undefined {
    const wanted = name.trim().toLowerCase();
    return this.list().find((c) => c.name.toLowerCase() === wanted || c.display_name?.toLowerCase() === wanted);
  }

  private reloadIfChanged(strict: boolean): void {
    const file = this.config.tools.roleplayCharactersFile;
    try {
      const version = statSync(file).mtimeMs;
      if (version === this.loadedVersion) return;
      this.characters = parseCharacters(readFileSync(file, 'utf8'));
      this.loadedVersion = version;
    } catch (error) {
      if (strict) throw new Error(`Role-play characters file ${file}: ${(error as Error).message}`);
    }
  }
}

function parseCharacters(text: string): Map<string, Character> {
  const parsed = plainToInstance(CharacterFile, JSON.parse(text) as object);
  const errors = validateSync(parsed);
  if (errors.length > 0) throw new Error(describeValidationErrors(errors));
  const byName = new Map<string, Character>();
  for (const character of parsed.characters) {
    if (byName.has(character.name)) throw new Error(`character "${character.name}" is listed twice`);
    byName.set(character.name, character);
  }
  return byName;
}
