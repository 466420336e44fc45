import Ajv, { ErrorObject } from 'ajv';
import ajvErrors from 'ajv-errors';
import { DETAILED_REFUSAL_MAX_VALUES, holdsMoreValuesThan, joinProblems } from './bounded-refusal';

/** A JSON Schema describing one frame (or body) of a protocol, with `errorMessage`s for its answers. */
export type FrameSchema = Readonly<Record<string, unknown>>;

/** Checks a parsed frame; returns the readable problem (every bad field of a small frame, `; `-joined), or `undefined`. */
export type FrameCheck = (frame: unknown) => string | undefined;

/** How deep a frame may nest, unless its schema says `maxDepth` itself (the LLM gateway tells its clients the same bound, `LIMITS.frameDepth`). */
export const FRAME_MAX_DEPTH = 64;

/**
 * Whether `value` nests at most `limit` arrays and objects deep. Iterative, so a frame nested
 * 100,000 deep costs a loop, not the stack; it stops at the first level past the limit.
 */
export function withinDepth(value: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    if (depth > limit) return false;
    const children = Array.isArray(node) ? node : Object.values(node);
    for (const child of children) if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
  }
  return true;
}

/**
 * The ajv instances for the protocols' own schemas: static, trusted, compiled once each at
 * start-up (tools' schemas, which clients send, have their own compiler in `core/tools`), with
 * `maxDepth` so no frame nests past a bound. Each schema is compiled twice: by one that stops at
 * the first problem (every frame goes through it), and by one with `allErrors` and `ajv-errors`
 * for the messages the schemas carry, so a refusal names every bad field (only refused frames
 * small enough for that to be cheap go through it, see {@link DETAILED_REFUSAL_MAX_VALUES}).
 */
function createAjv(everyProblem: boolean): Ajv {
  const ajv = new Ajv({ allErrors: everyProblem, verbose: !everyProblem, strict: false });
  if (everyProblem) ajvErrors(ajv);
  ajv.addKeyword({
    keyword: 'maxDepth',
    schemaType: 'number',
    errors: false,
    validate: (limit: number, data: unknown) => withinDepth(data, limit),
  });
  return ajv;
}

const firstProblemAjv = createAjv(false);
const everyProblemAjv = createAjv(true);
const compiled = new WeakMap<FrameSchema, FrameCheck>();

/**
 * The check of `schema`, compiled on first use and kept for the life of the process: a frame's
 * validation costs one generated function call, nothing per frame is built or reflected on.
 */
export function compileFrameSchema(schema: FrameSchema): FrameCheck {
  let check = compiled.get(schema);
  if (!check) {
    const bounded = { maxDepth: FRAME_MAX_DEPTH, ...schema };
    const firstProblem = firstProblemAjv.compile(bounded);
    const everyProblem = everyProblemAjv.compile(bounded);
    check = (frame) => {
      if (firstProblem(frame)) return undefined;
      if (holdsMoreValuesThan(frame, DETAILED_REFUSAL_MAX_VALUES)) return describeFirstFrameError(firstProblem.errors ?? []);
      everyProblem(frame);
      return describeFrameErrors(everyProblem.errors ?? []);
    };
    compiled.set(schema, check);
  }
  return check;
}

/** The message a schema's `errorMessage` gives an error (as `ajv-errors` would), from the error's own schema. */
function customMessageOf(error: ErrorObject): string | undefined {
  const custom = (error.parentSchema as { errorMessage?: unknown } | undefined)?.errorMessage;
  if (typeof custom === 'string') return custom;
  const byKeyword = (custom as Record<string, unknown> | undefined)?.[error.keyword];
  if (typeof byKeyword === 'string') return byKeyword;
  const byProperty = error.keyword === 'required' ? (byKeyword as Record<string, unknown> | undefined)?.[String(error.params.missingProperty)] : undefined;
  return typeof byProperty === 'string' ? byProperty : undefined;
}

/** The one problem a validator that stops at the first found; a combinator's (`anyOf`) error comes after its branches', so the last. */
function describeFirstFrameError(errors: ErrorObject[]): string {
  const error = errors.at(-1);
  if (!error) return 'the message is invalid';
  return customMessageOf(error) ?? describeFrameError(error);
}

function describeFrameError(error: ErrorObject): string {
  if (error.keyword === 'errorMessage') return error.message ?? 'is invalid';
  const path = error.instancePath.split('/').slice(1).join('.');
  if (error.keyword === 'maxDepth') return `${path || 'the message'} nests deeper than ${FRAME_MAX_DEPTH} levels`;
  if (error.keyword === 'required') {
    const missing = String(error.params.missingProperty);
    return `${path ? `${path}.${missing}` : missing} is required`;
  }
  return `${path || 'the message'} ${error.message}`;
}

/** ajv's errors as one line, without repeats, at most a few. */
export function describeFrameErrors(errors: ErrorObject[]): string {
  return joinProblems(errors.map(describeFrameError));
}
