import { defineTool } from '../../test/support/define-tool';
import { resultOf } from './utcp.frames';
import { ManualEndpoint, toCallTemplate, toHttpInputs, toUtcpManual, toUtcpTool } from './utcp.mapper';

const endpoint = (overrides: Partial<ManualEndpoint> = {}): ManualEndpoint => ({
  baseUrl: 'wss://tools.example.com/gw',
  streaming: false,
  authRequired: false,
  ...overrides,
});

const lights = defineTool({
  name: 'device.light.set',
  description: 'Turns a light on or off',
  inputSchema: { type: 'object', properties: { room: { type: 'string' }, on: { type: 'boolean' } }, required: ['room', 'on'] },
  outputSchema: { type: 'object', properties: { on: { type: 'boolean' } } },
  tags: ['home'],
  timeoutMs: 2500,
});

describe('UTCP manual mapping', () => {
  it('describes a tool with its schemas and tags, and a websocket template that reaches its own path', () => {
    expect(toUtcpTool(lights, endpoint())).toEqual({
      name: 'device.light.set',
      description: 'Turns a light on or off',
      inputs: lights.inputSchema,
      outputs: lights.outputSchema,
      tags: ['home'],
      tool_call_template: {
        call_template_type: 'websocket',
        name: 'device_light_set',
        url: 'wss://tools.example.com/gw/utcp/device.light.set',
        response_format: 'json',
        timeout: 4,
      },
    });
  });

  it('accepts any JSON result when the tool declares no output schema, and waits out its time limit', () => {
    expect(toUtcpTool(defineTool({}), endpoint()).outputs).toEqual({});
    expect(toCallTemplate(defineTool({}), endpoint()).timeout).toBe(11);
  });

  it('points templates at the streaming form of each path when the manual was asked for streaming', () => {
    expect(toUtcpTool(lights, endpoint({ streaming: true })).tool_call_template.url).toBe('wss://tools.example.com/gw/utcp/device.light.set?stream=true');
  });

  it('asks the client for its token through a UTCP variable when auth is on, and only then', () => {
    expect(toUtcpTool(lights, endpoint({ authRequired: true })).tool_call_template.auth).toEqual({
      auth_type: 'api_key',
      api_key: 'Bearer ${GATEWAY_TOKEN}',
      var_name: 'Authorization',
      location: 'header',
    });
    expect(toUtcpTool(lights, endpoint()).tool_call_template).not.toHaveProperty('auth');
  });

  it('builds the manual of every tool given, in order, with the versions it follows', () => {
    const manual = toUtcpManual([lights, defineTool({ name: 'other' })], endpoint());
    expect(manual).toMatchObject({ utcp_version: '1.0.1', manual_version: '1.0.0' });
    expect(manual.tools.map((tool) => tool.name)).toEqual(['device.light.set', 'other']);
    expect(toUtcpManual([], endpoint()).tools).toEqual([]);
  });

  describe('with HTTP call templates', () => {
    const http = (overrides: Partial<ManualEndpoint> = {}) =>
      endpoint({ baseUrl: 'https://tools.example.com/gw', callTemplate: 'http', streaming: 'per-tool', ...overrides });
    const countdown = defineTool({ name: 'countdown', tags: ['time', 'streaming'] });

    it('posts the arguments as the JSON body named by the template, the only input the manual declares', () => {
      expect(toUtcpTool(lights, http())).toEqual({
        name: 'device.light.set',
        description: 'Turns a light on or off',
        inputs: {
          type: 'object',
          properties: { body: { description: expect.any(String), ...lights.inputSchema } },
          required: ['body'],
          additionalProperties: false,
        },
        outputs: lights.outputSchema,
        tags: ['home'],
        tool_call_template: {
          call_template_type: 'http',
          name: 'device_light_set',
          url: 'https://tools.example.com/gw/utcp/device.light.set',
          http_method: 'POST',
          content_type: 'application/json',
          body_field: 'body',
        },
      });
    });

    it('gives a streaming tool an sse template on the streaming path, one that never reconnects (that would run it again)', () => {
      expect(toUtcpTool(countdown, http()).tool_call_template).toEqual({
        call_template_type: 'sse',
        name: 'countdown',
        url: 'https://tools.example.com/gw/utcp/countdown?stream=true',
        body_field: 'body',
        headers: { 'Content-Type': 'application/json' },
        reconnect: false,
      });
    });

    it('streams every tool or none when the manual was asked so', () => {
      expect(toUtcpTool(lights, http({ streaming: true })).tool_call_template.call_template_type).toBe('sse');
      expect(toUtcpTool(countdown, http({ streaming: false })).tool_call_template).toMatchObject({
        call_template_type: 'http',
        url: 'https://tools.example.com/gw/utcp/countdown',
      });
    });

    it('asks for the token through the same variable when auth is on', () => {
      for (const tool of [lights, countdown]) {
        expect(toUtcpTool(tool, http({ authRequired: true })).tool_call_template).toMatchObject({
          auth: { auth_type: 'api_key', api_key: 'Bearer ${GATEWAY_TOKEN}', var_name: 'Authorization', location: 'header' },
        });
      }
    });

    it('keeps the definitions where references into them still resolve, and requires no body of a tool that requires nothing', () => {
      const schema = {
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        properties: { at: { $ref: '#/$defs/time' } },
        $defs: { time: { type: 'string' } },
      };
      expect(toHttpInputs(schema)).toEqual({
        $schema: schema.$schema,
        type: 'object',
        properties: { body: { description: expect.any(String), type: 'object', properties: { at: { $ref: '#/$defs/time' } } } },
        additionalProperties: false,
        $defs: { time: { type: 'string' } },
      });
    });
  });

  it('answers with the value, else the content blocks a tool made, else null', () => {
    expect(resultOf({ value: { on: true } })).toEqual({ on: true });
    expect(resultOf({ value: 0 })).toBe(0);
    expect(resultOf({ value: undefined, content: [{ type: 'text', text: 'hi' }] })).toEqual([{ type: 'text', text: 'hi' }]);
    expect(resultOf({ value: undefined })).toBeNull();
  });
});
