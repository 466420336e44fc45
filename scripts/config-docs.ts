/**
 * Generates docs/configuration.md and .env.example from the settings class
 * (src/config/environment.ts): names and defaults from the class, types and allowed values from
 * its class-validator decorators, meaning, unit and section from its `@Setting` descriptions.
 * `npm run config:docs` writes them; src/config/config-docs.spec.ts fails when they are stale.
 */
import { writeFileSync } from 'fs';
import { join } from 'path';
import { getMetadataStorage } from 'class-validator';
import { ENVIRONMENT_VARIABLE_NAMES, EnvironmentVariables } from '../src/config/environment';
import { FALSE_WORDS, SETTING_GROUPS, SettingDescription, SettingGroup, settingDescription, TRUE_WORDS } from '../src/config/setting';

/** class-validator's record of one decorator; its type is not exported by name. */
type ValidationMetadata = ReturnType<ReturnType<typeof getMetadataStorage>['getTargetValidationMetadatas']>[number];

export const REGENERATE_COMMAND = 'npm run config:docs';

/** One setting as the reference shows it. */
export interface SettingReference extends SettingDescription {
  name: string;
  type: string;
  /** The default as it is written in `.env.example`; undefined when the setting has none. */
  default?: string;
  /** What a value must be, in words ("1024 or more"); undefined when any value of the type is. */
  allowed?: string;
}

const TYPES: Record<string, string> = {
  isBoolean: 'boolean',
  isInt: 'integer',
  isNumber: 'number',
  isUrl: 'URL',
  isObject: 'JSON object',
};

/**
 * Every setting, in declaration order, read from the class itself. Throws when a setting has no
 * `@Setting` description, or a custom validation message that does not start with
 * "<NAME> must be", which is how start-up errors name the variable and how the reference says
 * what is allowed.
 */
export function settingsReference(): SettingReference[] {
  const defaults = new EnvironmentVariables() as unknown as Record<string, unknown>;
  const validations = getMetadataStorage().getTargetValidationMetadatas(EnvironmentVariables, '', true, false);
  return ENVIRONMENT_VARIABLE_NAMES.map((name) => {
    const description = settingDescription(EnvironmentVariables, name);
    if (description === undefined) throw new Error(`${name} has no @Setting description in src/config/environment.ts`);
    const own = validations.filter((validation) => validation.propertyName === name);
    const value = defaults[name];
    return {
      name,
      ...description,
      type: typeOf(own),
      default: value === undefined ? undefined : String(value),
      allowed: allowedOf(name, own),
    };
  });
}

function typeOf(validations: ValidationMetadata[]): string {
  const check = validations.find((validation) => validation.name !== undefined && TYPES[validation.name] !== undefined);
  return check === undefined ? 'string' : TYPES[check.name!];
}

function allowedOf(name: string, validations: ValidationMetadata[]): string | undefined {
  const byName = (check: string) => validations.find((validation) => validation.name === check);
  const custom = validations.find((validation) => typeof validation.message === 'string');
  if (custom !== undefined) {
    const prefix = `${name} must be `;
    const message = custom.message as string;
    if (!message.startsWith(prefix)) throw new Error(`${name}'s message "${message}" must start with "${prefix}", naming the variable`);
    return message.slice(prefix.length);
  }
  if (byName('isBoolean')) return booleanWords();
  const oneOf = byName('isIn');
  if (oneOf) return (oneOf.constraints[0] as string[]).map((value) => `\`${value}\``).join(', ');
  const min = byName('min')?.constraints[0] as number | undefined;
  const max = byName('max')?.constraints[0] as number | undefined;
  if (min !== undefined && max !== undefined) return `${min} to ${max}`;
  if (min !== undefined) return `${min} or more`;
  if (max !== undefined) return `${max} or less`;
  const url = byName('isUrl');
  if (url) return `${(url.constraints[0] as { protocols: string[] }).protocols.join(' or ')} URL`;
  return undefined;
}

/** "`true` or `false` (or `1`/`0`, ...)", from the words `BooleanFromEnv` accepts. */
function booleanWords(): string {
  const [[yes, no], ...others] = [...TRUE_WORDS].map((word, index) => [word, [...FALSE_WORDS][index]]);
  return `\`${yes}\` or \`${no}\` (or ${others.map(([one, other]) => `\`${one}\`/\`${other}\``).join(', ')})`;
}

/** The settings of each section, sections in their reference order. */
function bySection(settings: SettingReference[]): [SettingGroup, SettingReference[]][] {
  return (Object.keys(SETTING_GROUPS) as SettingGroup[])
    .map((group): [SettingGroup, SettingReference[]] => [group, settings.filter((setting) => setting.group === group)])
    .filter(([, members]) => members.length > 0);
}

/** GitHub's anchor for a heading. */
const anchorOf = (title: string): string =>
  title
    .toLowerCase()
    .replace(/[^a-z0-9 -]/g, '')
    .replace(/ /g, '-');

const cell = (text: string): string => text.replace(/\|/g, '\\|');

function typeCell(setting: SettingReference): string {
  return setting.unit === undefined ? setting.type : `${setting.type} (${setting.unit})`;
}

export function defaultCell(setting: SettingReference): string {
  if (setting.default === undefined) return setting.unset ?? 'unset';
  return setting.default === '' ? 'empty' : `\`${setting.default}\``;
}

export function renderConfigurationDoc(settings: SettingReference[] = settingsReference()): string {
  const sections = bySection(settings);
  const lines = [
    '# Configuration reference',
    '',
    `<!-- Generated by \`${REGENERATE_COMMAND}\` from src/config/environment.ts: edit the settings there, then run it. -->`,
    '',
    'Every setting is an environment variable; a `.env` file in the working directory is read too',
    '([.env.example](../.env.example) lists them all with their defaults). Settings are checked before',
    'anything starts: an invalid value, or settings that contradict each other, stop the gateway with',
    'one message naming each variable and what is wrong with it. An empty value counts as unset.',
    'Durations are in seconds, except the `MCP_WS_*` timings, in milliseconds, as the specs have them.',
    '',
    ...sections.map(([group, members]) => {
      const { title } = SETTING_GROUPS[group];
      return `- [${title}](#${anchorOf(title)}): ${members.map((setting) => `\`${setting.name}\``).join(', ')}`;
    }),
  ];
  for (const [group, members] of sections) {
    const { title, about } = SETTING_GROUPS[group];
    lines.push('', `## ${title}`, '', about, '', '| Variable | Type | Default | Allowed values | Meaning |', '| --- | --- | --- | --- | --- |');
    for (const setting of members) {
      const cells = [`\`${setting.name}\``, typeCell(setting), defaultCell(setting), setting.allowed ?? 'any', setting.about];
      lines.push(`| ${cells.map(cell).join(' | ')} |`);
    }
  }
  return `${lines.join('\n')}\n`;
}

const COMMENT_WIDTH = 100;

/** `text` as `# ` comment lines of at most {@link COMMENT_WIDTH} characters, code spans as plain text. */
function comment(text: string): string[] {
  const lines: string[] = [];
  let line = '#';
  for (const word of text.replace(/`/g, '').split(/\s+/)) {
    if (line.length + 1 + word.length > COMMENT_WIDTH && line !== '#') {
      lines.push(line);
      line = '#';
    }
    line += ` ${word}`;
  }
  return [...lines, line];
}

/** The meaning, with its unit when it does not say it already: `.env.example` has no type column. */
function withUnit({ about, unit }: SettingReference): string {
  return unit === undefined || about.toLowerCase().includes(unit) ? about : `${about} In ${unit}.`;
}

/** A value as dotenv reads it back: quoted when it holds a space or a `#`. */
const envValue = (value: string): string => (/[\s#"']/.test(value) ? JSON.stringify(value) : value);

export function renderEnvExample(settings: SettingReference[] = settingsReference()): string {
  const lines = [
    `# Generated by \`${REGENERATE_COMMAND}\` from src/config/environment.ts: edit the settings there.`,
    '#',
    ...comment(
      "Every setting the gateway reads, with its default. Copy to .env (or set in the environment) and change what you need; an empty value keeps the default, and an invalid value stops the boot with a message naming it. docs/configuration.md gives each one's type and allowed values.",
    ),
  ];
  for (const [group, members] of bySection(settings)) {
    const { title, about } = SETTING_GROUPS[group];
    lines.push('', `# --- ${title} ---`, ...comment(about), '');
    for (const setting of members) lines.push(...comment(withUnit(setting)), `${setting.name}=${envValue(setting.default ?? '')}`);
  }
  return `${lines.join('\n')}\n`;
}

/** The generated files, by path from the repository's root. */
export const GENERATED_FILES: Record<string, () => string> = {
  'docs/configuration.md': () => renderConfigurationDoc(),
  '.env.example': () => renderEnvExample(),
};

if (require.main === module) {
  const root = join(__dirname, '..');
  for (const [path, render] of Object.entries(GENERATED_FILES)) {
    writeFileSync(join(root, path), render());
    process.stdout.write(`wrote ${path}\n`);
  }
}
