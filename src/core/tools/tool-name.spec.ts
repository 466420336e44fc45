import { isValidToolName, toolNameProblem } from './tool-name';

describe('tool names (LLM gateway spec 4.6)', () => {
  it.each(['get_battery', 'device.light.turn_on', 'weather.get_current', 'sensor.temperature.read', '_private', 'a', 'x'.repeat(64)])('accepts %s', (name) =>
    expect(isValidToolName(name)).toBe(true),
  );

  it.each([
    ['1tool', /start with a letter/],
    ['tool.', /must not end with "."/],
    ['tool..name', /must not contain ".."/],
    ['', /non-empty/],
    ['x'.repeat(65), /longer than 64/],
    ['has space', /only letters/],
    ['dash-name', /only letters/],
    ['.dot', /start with a letter/],
  ])('refuses %s', (name, reason) => {
    expect(toolNameProblem(name)).toMatch(reason);
  });

  it('refuses a non-string', () => expect(isValidToolName(42)).toBe(false));
});
