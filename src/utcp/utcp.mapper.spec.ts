import { defineTool } from '../../test/support/define-tool';
import { resultOf } from './utcp.frames';
import { ManualEndpoint, toUtcpManual, toUtcpTool } from './utcp.mapper';

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
    const tool = toUtcpTool(defineTool({}), endpoint());
    expect(tool.outputs).toEqual({});
    expect(tool.tool_call_template.timeout).toBe(11);
  });

  it('points templates at the streaming form of each path when the manual was asked for streaming', () => {
    expect(toUtcpTool(lights, endpoint({ streaming: true })).tool_call_template.url).toBe(
      'wss://tools.example.com/gw/utcp/device.light.set?stream=true',
    );
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

  it('answers with the value, else the content blocks a tool made, else null', () => {
    expect(resultOf({ value: { on: true } })).toEqual({ on: true });
    expect(resultOf({ value: 0 })).toBe(0);
    expect(resultOf({ value: undefined, content: [{ type: 'text', text: 'hi' }] })).toEqual([{ type: 'text', text: 'hi' }]);
    expect(resultOf({ value: undefined })).toBeNull();
  });
});
