import type { JsonSchema } from '../core/tools/json-schema';
import type { ToolContentBlock, ToolDefinition, ToolOutcome } from '../core/tools/tool-definition';
import { LITEMCP_VERSION, LiteMcpCallResult, LiteMcpContent, LiteMcpParameter, LiteMcpTool } from './litemcp.frames';

/**
 * Catalogue tool <-> LiteMCP. LiteMCP has no schemas: a tool lists its parameters (the input
 * schema's top-level properties, in order), every argument travels as a string in that order,
 * and results are content strings. This file is the whole translation.
 */

function propertiesOf(tool: ToolDefinition): [string, JsonSchema][] {
  const properties = (tool.inputSchema.properties ?? {}) as Record<string, JsonSchema>;
  return Object.entries(properties);
}

function requiredOf(tool: ToolDefinition): Set<string> {
  const required = tool.inputSchema.required;
  return new Set(Array.isArray(required) ? (required as string[]) : []);
}

function typeLabel(schema: JsonSchema): string {
  const { type } = schema;
  if (typeof type === 'string') return type;
  if (Array.isArray(type)) return type.filter((t) => t !== 'null').join('|') || 'null';
  if (Array.isArray(schema.enum)) return typeof schema.enum[0] === 'number' ? 'number' : 'string';
  return 'string';
}

function asText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function describeParameter(schema: JsonSchema, optional: boolean): string | undefined {
  const parts = [typeof schema.description === 'string' ? schema.description.replace(/\.?\s*$/, '.') : undefined];
  if (Array.isArray(schema.enum)) parts.push(`One of: ${schema.enum.map(asText).join(', ')}.`);
  if (optional) {
    parts.push(schema.default !== undefined ? `Optional, default ${asText(schema.default)}.` : 'Optional.');
  }
  const text = parts.filter(Boolean).join(' ');
  return text || undefined;
}

/** The tool as LiteMCP's `Tool`. */
export function toLiteMcpTool(tool: ToolDefinition): LiteMcpTool {
  const required = requiredOf(tool);
  const exampleArguments = tool.examples[0]?.arguments ?? {};
  const parameters = propertiesOf(tool).map(([name, schema]): LiteMcpParameter => {
    const example = Array.isArray(schema.examples) ? schema.examples[0] : (exampleArguments[name] ?? schema.default);
    const parameter: LiteMcpParameter = { name, type: typeLabel(schema) };
    const description = describeParameter(schema, !required.has(name));
    if (description) parameter.description = description;
    if (example !== undefined) parameter.example = asText(example);
    return parameter;
  });
  const described: LiteMcpTool = { version: LITEMCP_VERSION, name: tool.name, description: tool.description };
  if (tool.examples[0]) described.example = tool.examples[0].description;
  described.parameters = parameters;
  return described;
}

/** Reads one positional string as the property's JSON type; `undefined` when it cannot. */
function coerce(text: string, schema: JsonSchema): { value: unknown } | undefined {
  const declared = schema.type;
  const types: string[] = Array.isArray(declared) ? [...declared] : typeof declared === 'string' ? [declared] : [];
  // With no declared type, an enum of numbers still wants a number.
  if (types.length === 0) types.push(Array.isArray(schema.enum) && typeof schema.enum[0] === 'number' ? 'number' : 'string');
  // Try the stricter readings first, so "5" for ["string", "number"] is the number.
  types.sort((a, b) => (a === 'string' ? 1 : 0) - (b === 'string' ? 1 : 0));
  const trimmed = text.trim();
  for (const type of types) {
    switch (type) {
      case 'string':
        return { value: text };
      case 'number':
      case 'integer': {
        const number = Number(trimmed);
        if (trimmed !== '' && Number.isFinite(number) && (type === 'number' || Number.isInteger(number))) {
          return { value: number };
        }
        break;
      }
      case 'boolean':
        if (/^(true|false)$/i.test(trimmed)) return { value: trimmed.toLowerCase() === 'true' };
        break;
      case 'null':
        if (trimmed === 'null') return { value: null };
        break;
      case 'object':
      case 'array':
        try {
          const parsed: unknown = JSON.parse(trimmed);
          const isArray = Array.isArray(parsed);
          if (parsed !== null && typeof parsed === 'object' && isArray === (type === 'array')) return { value: parsed };
        } catch {
          // not JSON: try the next type
        }
        break;
    }
  }
  return undefined;
}

export type CoercedArguments =
  { ok: true; args: Record<string, unknown>; params: Record<string, string> } | { ok: false; problem: string; params: Record<string, string> };

/**
 * Positional strings -> the arguments object the tool's schema describes. An empty string for
 * a non-string parameter means "not given", so a client can skip an optional parameter in the
 * middle. Schema validation (required, ranges, enums) happens afterwards, in the registry.
 */
export function coerceArguments(tool: ToolDefinition, values: string[]): CoercedArguments {
  const properties = propertiesOf(tool);
  const params: Record<string, string> = {};
  properties.slice(0, values.length).forEach(([name], index) => (params[name] = values[index]));
  if (values.length > properties.length) {
    const names = properties.map(([name]) => name).join(', ') || 'none';
    return {
      ok: false,
      problem: `Tool "${tool.name}" takes at most ${properties.length} argument(s) (${names}), got ${values.length}`,
      params,
    };
  }
  const args: Record<string, unknown> = {};
  for (const [index, text] of values.entries()) {
    const [name, schema] = properties[index];
    if (text === '' && schema.type !== 'string') continue;
    const coerced = coerce(text, schema);
    if (!coerced) {
      return { ok: false, problem: `Argument "${name}" must be ${typeLabel(schema)}, got ${JSON.stringify(text)}`, params };
    }
    args[name] = coerced.value;
  }
  return { ok: true, args, params };
}

function contentOfBlock(block: ToolContentBlock): LiteMcpContent {
  if (block.type === 'text' && typeof block.text === 'string') return { type: 'text', data: block.text };
  if ((block.type === 'image' || block.type === 'audio') && typeof block.data === 'string') {
    return { type: typeof block.mimeType === 'string' ? block.mimeType : block.type, data: block.data };
  }
  return { type: block.type, data: JSON.stringify(block) };
}

function contentOfValue(value: unknown): LiteMcpContent[] {
  if (value === undefined || value === null) return [];
  if (typeof value === 'string') return [{ type: 'text', data: value }];
  if (typeof value === 'number' || typeof value === 'boolean') return [{ type: typeof value, data: String(value) }];
  return [{ type: 'json', data: JSON.stringify(value) }];
}

/** A failed call as a CallResult: `error: true` and the reason as text for the model to read. */
export function failedCallResult(params: Record<string, string>, message: string): LiteMcpCallResult {
  return { version: LITEMCP_VERSION, params, response: { content: [{ type: 'text', data: message }], error: true } };
}

/** The outcome of a catalogue call as a CallResult. */
export function toCallResult(params: Record<string, string>, outcome: ToolOutcome): LiteMcpCallResult {
  if (!outcome.ok) return failedCallResult(params, outcome.message);
  const content = outcome.content ? outcome.content.map(contentOfBlock) : contentOfValue(outcome.value);
  return { version: LITEMCP_VERSION, params, response: { content, error: false } };
}
