import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { readFileSync } from 'fs';
import { InvalidConfigurationError } from '../config/environment';
import type { GatewayConfig } from '../config/gateway-config';
import { describeValidationErrors } from '../core/validation/validation-message';
import { McpServerEntryDto } from './dto/mcp-server-entry.dto';
import { defaultPrefix, prefixProblem } from './upstream-tool-names';

export type UpstreamTransport = 'stdio' | 'streamable-http' | 'sse';

interface UpstreamServerSettings {
  /** The key in `mcpServers`; tools come from source `mcp:<name>`. */
  name: string;
  prefix: string;
  disabled: boolean;
  connectTimeoutMs: number;
  callTimeoutMs: number;
}

export interface StdioUpstreamServer extends UpstreamServerSettings {
  transport: 'stdio';
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd?: string;
}

export interface UpstreamOAuthCredentials {
  issuer: string;
  clientId: string;
  clientSecret: string;
  scope?: string;
}

export interface RemoteUpstreamServer extends UpstreamServerSettings {
  transport: 'streamable-http' | 'sse';
  url: URL;
  headers: Record<string, string>;
  /** The gateway's own OAuth client credentials at the upstream's authorization server. */
  oauth?: UpstreamOAuthCredentials;
  /** No `type` was given: try Streamable HTTP, then SSE when the server refuses it with a 4xx. */
  sseFallback: boolean;
}

/** One upstream MCP server, validated and with its defaults filled in. */
export type UpstreamServerConfig = StdioUpstreamServer | RemoteUpstreamServer;

type UpstreamDefaults = GatewayConfig['mcp']['upstream'];

const STDIO_ONLY = ['args', 'env', 'cwd'] as const;
const REMOTE_ONLY = { headers: 'headers apply only to a url, not to a command', oauth: 'oauth applies only to a url, not to a command' };

/** What is wrong with an entry beyond its fields' own checks: the combination of fields. */
function combinationProblems(entry: McpServerEntryDto): string[] {
  const remote = entry.url !== undefined;
  if (remote && entry.command !== undefined) return ['give either command (a local server) or url (a remote one), not both'];
  if (entry.type === 'stdio' && remote) return ['type "stdio" needs command, not url'];
  if (entry.type !== undefined && entry.type !== 'stdio' && !remote) return [`type "${entry.type}" needs url, not command`];
  if (remote) return STDIO_ONLY.filter((field) => entry[field] !== undefined).map((field) => `${field} applies only to a command, not to a url`);
  return Object.entries(REMOTE_ONLY)
    .filter(([field]) => entry[field as keyof typeof REMOTE_ONLY] !== undefined)
    .map(([, problem]) => problem);
}

function entryProblems(name: string, raw: unknown): { entry?: McpServerEntryDto; problems: string[] } {
  if (name.trim() === '' || name.length > 64) return { problems: ['a server name must have 1 to 64 characters'] };
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return { problems: ['must be an object with command or url'] };
  const entry = plainToInstance(McpServerEntryDto, raw);
  if (entry.command === undefined && entry.url === undefined) return { problems: ['needs command (a local server) or url (a remote one)'] };
  const fieldProblems = describeValidationErrors(validateSync(entry));
  if (fieldProblems) return { problems: [fieldProblems] };
  const prefix = prefixProblem(entry.prefix ?? '');
  return { entry, problems: [...combinationProblems(entry), ...(prefix ? [prefix] : [])] };
}

function toServer(name: string, entry: McpServerEntryDto, defaults: UpstreamDefaults): UpstreamServerConfig {
  const settings: UpstreamServerSettings = {
    name,
    prefix: entry.prefix ?? defaultPrefix(name),
    disabled: entry.disabled ?? false,
    connectTimeoutMs: entry.connectTimeout === undefined ? defaults.connectTimeoutMs : Math.round(entry.connectTimeout * 1000),
    callTimeoutMs: entry.callTimeout === undefined ? defaults.callTimeoutMs : Math.round(entry.callTimeout * 1000),
  };
  if (entry.url === undefined) {
    return { ...settings, transport: 'stdio', command: entry.command!, args: entry.args ?? [], env: entry.env ?? {}, cwd: entry.cwd };
  }
  return {
    ...settings,
    transport: entry.type === 'sse' ? 'sse' : 'streamable-http',
    url: new URL(entry.url),
    headers: entry.headers ?? {},
    oauth: entry.oauth && { issuer: entry.oauth.issuer, clientId: entry.oauth.clientId, clientSecret: entry.oauth.clientSecret, scope: entry.oauth.scope },
    sseFallback: entry.type === undefined,
  };
}

/**
 * The servers of an `{"mcpServers": {...}}` document. Throws {@link InvalidConfigurationError}
 * listing every bad entry, each as `<where>: server "<name>": <problem>`.
 */
export function parseMcpServers(document: unknown, defaults: UpstreamDefaults, where: string): UpstreamServerConfig[] {
  const servers = (document as { mcpServers?: unknown } | null)?.mcpServers;
  if (servers === null || typeof servers !== 'object' || Array.isArray(servers)) {
    throw new InvalidConfigurationError([`${where}: must be a JSON object with an "mcpServers" object, as desktop MCP clients use`]);
  }
  const problems: string[] = [];
  const parsed: UpstreamServerConfig[] = [];
  for (const [name, raw] of Object.entries(servers)) {
    const { entry, problems: found } = entryProblems(name, raw);
    problems.push(...found.map((problem) => `${where}: server ${JSON.stringify(name)}: ${problem}`));
    if (entry && found.length === 0) parsed.push(toServer(name, entry, defaults));
  }
  if (problems.length > 0) throw new InvalidConfigurationError(problems);
  return parsed;
}

/** Reads and validates `MCP_SERVERS_FILE`; every problem names the file and the entry. */
export function readMcpServersFile(path: string, defaults: UpstreamDefaults): UpstreamServerConfig[] {
  const where = `MCP_SERVERS_FILE ${path}`;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new InvalidConfigurationError([`${where} cannot be read: ${(error as Error).message}`]);
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    throw new InvalidConfigurationError([`${where} is not valid JSON: ${(error as Error).message}`]);
  }
  return parseMcpServers(document, defaults, where);
}
