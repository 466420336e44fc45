import { JsonSchemaCompiler } from './json-schema';

describe('JsonSchemaCompiler', () => {
  const compiler = new JsonSchemaCompiler();

  it('accepts object schemas and refuses what cannot describe an arguments object', () => {
    expect(compiler.inputSchemaProblem({ type: 'object', properties: { a: { type: 'number' } } })).toBeUndefined();
    expect(compiler.inputSchemaProblem({ properties: {} })).toBeUndefined();
    expect(compiler.inputSchemaProblem({ type: 'string' })).toMatch(/must describe an object/);
    expect(compiler.inputSchemaProblem([])).toMatch(/JSON Schema object/);
    expect(compiler.inputSchemaProblem(null)).toMatch(/JSON Schema object/);
    expect(compiler.inputSchemaProblem({ type: 'object', properties: { a: { type: 'nonsense' } } })).toMatch(/Invalid JSON Schema/);
    expect(compiler.inputSchemaProblem({ type: 'object', required: 'a' })).toMatch(/Invalid JSON Schema/);
  });

  it('explains failures argument by argument', () => {
    const check = compiler.compile({
      type: 'object',
      properties: { a: { type: 'number' }, op: { enum: ['add', 'sub'] }, nested: { type: 'object', properties: { x: { type: 'integer' } } } },
      required: ['a'],
      additionalProperties: false,
    });
    expect(check({ a: 1, op: 'add' })).toBeUndefined();
    expect(check({})).toBe('missing required argument "a"');
    expect(check({ a: 'x' })).toBe('argument "a" must be number');
    expect(check({ a: 1, op: 'mul' })).toBe('argument "op" must be one of: "add", "sub"');
    expect(check({ a: 1, extra: true })).toBe('unexpected argument "extra"');
    expect(check({ a: 1, nested: { x: 1.5 } })).toBe('argument "nested.x" must be integer');
    expect(check({ a: 'x', extra: 1 })).toContain(';');
  });

  it('fills in declared defaults', () => {
    const check = compiler.compile({ type: 'object', properties: { op: { type: 'string', default: 'add' } } });
    const args: Record<string, unknown> = {};
    expect(check(args)).toBeUndefined();
    expect(args.op).toBe('add');
  });

  it('understands draft 2020-12 schemas and known formats', () => {
    const check = compiler.compile({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: { when: { type: 'string', format: 'date' }, pair: { type: 'array', prefixItems: [{ type: 'number' }] } },
    });
    expect(check({ when: '2026-11-21', pair: [1] })).toBeUndefined();
    expect(check({ when: 'tomorrow' })).toMatch(/must match format "date"/);
    expect(check({ pair: ['x'] })).toMatch(/pair.0/);
  });

  it('lets two schemas share an $id, and releases them', () => {
    const schema = { $id: 'urn:same', type: 'object', properties: { a: { type: 'number' } } };
    const first = compiler.compile(schema);
    const second = compiler.compile({ ...schema });
    first.dispose();
    second.dispose();
    expect(compiler.compile(schema)({ a: 1 })).toBeUndefined();
  });

  it('throws when a schema cannot be compiled', () => {
    expect(() => compiler.compile({ type: 'object', properties: { a: { $ref: '#/definitions/missing' } } })).toThrow();
  });
});
