import { parseServerFrame } from '../src/protocol/index';
import { checkSettings, checkText } from '../src/validation';

describe('request checks', () => {
  it('accepts the settings the gateway accepts, dropping undefined ones', () => {
    expect(checkSettings({ temperature: 0, max_tokens: 32768, enable_context: true, language: 'ja', clean_response: false, extra: undefined })).toEqual({
      temperature: 0,
      max_tokens: 32768,
      enable_context: true,
      language: 'ja',
      clean_response: false,
    });
  });

  it('names every bad or unknown setting at once', () => {
    expect(() => checkSettings({ temperature: 1.5, max_tokens: 2.5, enable_context: 'yes', language: 'xx', temprature: 1 })).toThrow(
      new TypeError(
        'temperature must be a number from 0 to 1; max_tokens must be an integer from 1 to 32768; enable_context must be true or false; ' +
          'language must be one of zh, en, ja, ko, de, fr, ru, pt, es, it; ' +
          'unknown setting "temprature" (known: temperature, max_tokens, enable_context, language, clean_response, stream, barge_in)',
      ),
    );
    expect(() => checkSettings(null)).toThrow('settings must be an object');
    expect(() => checkSettings({ max_tokens: 0 })).toThrow(/max_tokens/);
  });

  it("refuses empty or non-string text with the gateway's words", () => {
    expect(checkText(' hi ')).toBe(' hi ');
    expect(() => checkText('  ')).toThrow('Text cannot be empty');
    expect(() => checkText(42)).toThrow('text must be a string');
  });

  it('reads server frames and nothing else', () => {
    expect(parseServerFrame('{"type":"pong","timestamp":"t"}')).toEqual({ type: 'pong', timestamp: 't' });
    expect(parseServerFrame('{"type":"text_input","text":"x"}')).toBeUndefined();
    expect(parseServerFrame('not json')).toBeUndefined();
    expect(parseServerFrame('null')).toBeUndefined();
  });
});
