import { clipLogMessage, LOG_MESSAGE_MAX_LENGTH } from './gateway-logger';
import { redactStrings, redactUrl, redactUrlCredentials } from './redact';

describe('redaction and clipping', () => {
  it('hides the credentials of every URL in a text', () => {
    expect(redactUrlCredentials('The model server at http://user:pa55word@llm.local:8000/v1/ could not be reached')).toBe(
      'The model server at http://***@llm.local:8000/v1/ could not be reached',
    );
    expect(redactUrlCredentials('http://llm.local/v1/ and https://a:b@x/ ok')).toBe('http://llm.local/v1/ and https://***@x/ ok');
    expect(redactUrlCredentials('connect to redis://:hunter2@cache:6379 failed')).toBe('connect to redis://***@cache:6379 failed');
  });

  it('redacts every string of a value, however deep, and copies the rest', () => {
    const hide = (text: string) => text.split('s3cret').join('***');
    const result = { content: [{ type: 'text', text: 'token s3cret echoed' }], structuredContent: { echo: ['s3cret', 5, null, true] }, isError: false };
    expect(redactStrings(result, hide)).toEqual({
      content: [{ type: 'text', text: 'token *** echoed' }],
      structuredContent: { echo: ['***', 5, null, true] },
      isError: false,
    });
    expect(result.content[0].text).toBe('token s3cret echoed');
  });

  it('clips a long log message and says how much was left out', () => {
    expect(clipLogMessage('short')).toBe('short');
    const clipped = clipLogMessage('x'.repeat(500_000)) as string;
    expect(clipped.length).toBeLessThan(LOG_MESSAGE_MAX_LENGTH + 40);
    expect(clipped).toMatch(/… \[498000 more characters\]$/);
  });
});

describe('redactUrl', () => {
  it.each([
    ['redis://:s3cret@redis.internal:6379/0', 'redis://:***@redis.internal:6379/0'],
    ['redis://default:s3cret@redis.internal:6379', 'redis://***:***@redis.internal:6379'],
    ['https://user@llm.example/v1/', 'https://***@llm.example/v1/'],
    ['https://llm.example/v1/?api_key=abc&model=x', 'https://llm.example/v1/?api_key=***&model=x'],
    ['http://127.0.0.1:8000/v1/', 'http://127.0.0.1:8000/v1/'],
    ['not a url', 'not a url'],
  ])('%s -> %s', (given, shown) => expect(redactUrl(given)).toBe(shown));
});
