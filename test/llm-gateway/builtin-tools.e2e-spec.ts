import { mkdtempSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { ToolRegistryService } from '../../src/core/tools/tool-registry.service';
import { LiteMcpClient } from '../support/litemcp-client';
import { LlmClient, LlmStack, startLlmStack } from '../support/llm-stack';
import { toolResults } from '../support/scripted-llm';

/** Has the model call `name` with `args` and answer with the tool's result as JSON; returns that result. */
async function viaModel(stack: LlmStack, client: LlmClient, name: string, args: object = {}): Promise<any> {
  stack.llm.reply({ toolCalls: [{ id: 't', name, arguments: args }] }, (request) => ({ text: JSON.stringify(toolResults(request).t) }));
  client.send({ type: 'text_input', text: `use ${name}` });
  const frames = await client.until('status', 'idle');
  return JSON.parse(frames.find((frame) => frame.type === 'llm_response').content);
}

describe('built-in tools (spec 7.2)', () => {
  let stack: LlmStack;
  let client: LlmClient;
  let charactersFile: string;

  beforeAll(async () => {
    charactersFile = join(mkdtempSync(join(tmpdir(), 'characters-')), 'characters.json');
    writeFileSync(
      charactersFile,
      JSON.stringify({
        characters: [{ name: 'pirate', display_name: 'Captain Redbeard', description: 'A pirate', prompt: 'Speak like a pirate.' }],
      }),
    );
    stack = await startLlmStack({ ROLEPLAY_CHARACTERS_FILE: charactersFile, AUTH_TOKENS: 'alice,bob' });
  });
  afterAll(() => stack.close());
  beforeEach(async () => {
    stack.llm.reset();
    stack.weather.requests.length = 0;
    stack.weather.unavailable = false;
    client = await stack.connect('/', { Authorization: 'Bearer alice' });
  });
  afterEach(() => client.close());

  describe('get_weather', () => {
    it('geocodes the city and reads its forecast from Open-Meteo', async () => {
      const report = await viaModel(stack, client, 'get_weather', { city: '北京' });
      expect(report).toMatchObject({ city: '北京', country: '中国', condition: 'clear sky', temperature: 22.5, humidity: 45, unit: 'celsius' });
      const [geocoding, forecast] = stack.weather.requests;
      expect(geocoding.pathname).toBe('/v1/search');
      expect(geocoding.searchParams.get('name')).toBe('北京');
      expect(geocoding.searchParams.get('language')).toBe('zh');
      expect(forecast.searchParams.get('latitude')).toBe('39.9075');
      expect(forecast.searchParams.get('current')).toContain('temperature_2m');
    });

    it("reads a later day's forecast without current conditions", async () => {
      const report = await viaModel(stack, client, 'get_weather', { city: 'Paris', date: 'tomorrow' });
      expect(report).toMatchObject({ city: 'Paris', condition: 'slight rain', temperature: 19.7, temperature_max: 25.1, precipitation_probability: 40 });
      const forecast = stack.weather.requests[1];
      expect(forecast.searchParams.has('current')).toBe(false);
      expect(report.date).toBe(forecast.searchParams.get('start_date'));
    });

    it("uses the assistant's location when no city is given", async () => {
      const report = await viaModel(stack, client, 'get_weather', {});
      expect(report.city).toBe('Hangzhou');
      expect(stack.weather.requests.map((url) => url.pathname)).toEqual(['/ip', '/v1/forecast']);
    });

    it.each([
      [{ city: 'Atlantis' }, 'No place called "Atlantis" was found'],
      [{ city: 'Paris', date: 'someday' }, 'Cannot read the date "someday": use YYYY-MM-DD, "today" or "tomorrow"'],
      [{ city: 'Paris', date: '2099-01-01' }, /from 92 days ago to 15 days ahead, not for 2099-01-01/],
    ])('fails clearly for %o', async (args, message) => {
      const report = await viaModel(stack, client, 'get_weather', args);
      expect(report.error).toMatchObject({ code: 'TOOL_EXECUTION_FAILED' });
      expect(report.error.message).toMatch(message);
    });

    it('reports the weather service being down', async () => {
      stack.weather.unavailable = true;
      const report = await viaModel(stack, client, 'get_weather', { city: 'Paris' });
      expect(report.error.message).toBe('The geocoding service answered HTTP 503: Service temporarily unavailable');
    });
  });

  it('get_location asks the IP geolocation service', async () => {
    expect(await viaModel(stack, client, 'get_location')).toEqual({
      city: 'Hangzhou',
      region: 'Zhejiang',
      country: 'China',
      latitude: 30.29365,
      longitude: 120.16142,
      timezone: 'Asia/Shanghai',
      source: 'ip-geolocation',
    });
  });

  describe('response language', () => {
    it("sets, reads and applies the session's language; lists the ten languages", async () => {
      const languages = await viaModel(stack, client, 'list_supported_languages');
      expect(languages.languages.map((l: { code: string }) => l.code)).toEqual(['zh', 'en', 'ja', 'ko', 'de', 'fr', 'ru', 'pt', 'es', 'it']);
      expect(await viaModel(stack, client, 'get_response_language')).toEqual({ language: null });
      expect(await viaModel(stack, client, 'set_response_language', { language: 'fr' })).toEqual({
        language: { code: 'fr', name: 'French', native_name: 'Français' },
        status: 'set',
      });
      expect((await viaModel(stack, client, 'get_response_language')).language.code).toBe('fr');
      expect(stack.llm.requests.at(-1)!.messages[0].content).toContain('Always answer in French (Français)');
    });

    it('refuses a language outside the ten', async () => {
      const result = await viaModel(stack, client, 'set_response_language', { language: 'tlh' });
      expect(result.error).toMatchObject({ code: 'INVALID_TOOL_PARAMETERS' });
    });

    it('applies a language set mid-turn to the rest of that turn', async () => {
      stack.llm.reply({ toolCalls: [{ name: 'set_response_language', arguments: { language: 'de' } }] }, { text: 'Hallo' });
      client.send({ type: 'text_input', text: 'Sprich Deutsch' });
      await client.until('llm_response');
      expect(stack.llm.requests[0].messages[0].content).not.toContain('German');
      expect(stack.llm.requests[1].messages[0].content).toContain('Always answer in German (Deutsch)');
    });
  });

  describe('role-play', () => {
    it('lists, enters, reports and exits a character, applied to the system prompt', async () => {
      expect(await viaModel(stack, client, 'list_available_characters')).toEqual({
        characters: [{ name: 'pirate', display_name: 'Captain Redbeard', description: 'A pirate' }],
      });
      expect(await viaModel(stack, client, 'enter_roleplay_mode', { character: 'Captain Redbeard' })).toMatchObject({
        roleplay: true,
        character: { name: 'pirate' },
        session_id: client.sessionId,
      });
      expect(stack.llm.requests.at(-1)!.messages[0].content).toContain('Role-play: you are Captain Redbeard. Speak like a pirate.');
      expect(await viaModel(stack, client, 'get_roleplay_status')).toMatchObject({ roleplay: true, character: { name: 'pirate' } });
      expect(await viaModel(stack, client, 'exit_roleplay_mode')).toMatchObject({ roleplay: false, previous_character: 'pirate' });
      expect(stack.llm.requests.at(-1)!.messages[0].content).not.toContain('Role-play');
    });

    it('names the available characters when asked for an unknown one', async () => {
      const result = await viaModel(stack, client, 'enter_roleplay_mode', { character: 'dragon' });
      expect(result.error.message).toBe('No character called "dragon". Available: pirate');
    });

    it("acts on another session of the same principal, and on no one else's", async () => {
      const mine = await stack.connect('/', { Authorization: 'Bearer alice' });
      const theirs = await stack.connect('/', { Authorization: 'Bearer bob' });
      expect(await viaModel(stack, client, 'enter_roleplay_mode', { character: 'pirate', session_id: mine.sessionId })).toMatchObject({
        session_id: mine.sessionId,
      });
      expect(await viaModel(stack, client, 'get_roleplay_status', { session_id: mine.sessionId })).toMatchObject({ roleplay: true });
      const refused = await viaModel(stack, client, 'get_roleplay_status', { session_id: theirs.sessionId });
      expect(refused.error.message).toMatch(/belongs to another client/);
      await Promise.all([mine.close(), theirs.close()]);
    });

    it('picks up edits to the characters file without a restart', async () => {
      writeFileSync(
        charactersFile,
        JSON.stringify({
          characters: [
            { name: 'pirate', description: 'A pirate', prompt: 'Speak like a pirate.' },
            { name: 'robot', description: 'A robot', prompt: 'Beep.' },
          ],
        }),
      );
      const listed = await viaModel(stack, client, 'list_available_characters');
      expect(listed.characters.map((c: { name: string }) => c.name)).toEqual(['pirate', 'robot']);
    });
  });

  it('serves the session tools on other protocols, failing clearly without a session', async () => {
    const liteMcp = await LiteMcpClient.connect(stack.gateway.ws('/litemcp/set_response_language'), 'alice');
    const result = await liteMcp.call('set_response_language', ['en']);
    expect(result.response).toEqual({ error: true, content: [{ type: 'text', data: 'This tool works inside an LLM-gateway conversation' }] });
    liteMcp.close();
    expect(stack.gateway.app.get(ToolRegistryService).get('list_supported_languages')?.source).toBe('builtin');
  });
});

describe('built-in tools configuration', () => {
  it('takes the location from LOCATION_* settings when given', async () => {
    const stack = await startLlmStack({ LOCATION_CITY: 'Paris', LOCATION_COUNTRY: 'France' });
    try {
      const client = await stack.connect();
      expect(await viaModel(stack, client, 'get_location')).toEqual({ city: 'Paris', country: 'France', source: 'configuration' });
      const report = await viaModel(stack, client, 'get_weather');
      expect(report.city).toBe('Paris');
      expect(stack.weather.requests.map((url) => url.pathname)).toEqual(['/v1/search', '/v1/forecast']);
      await client.close();
    } finally {
      await stack.close();
    }
  });

  it('refuses to start with a broken characters file, naming it', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'characters-')), 'broken.json');
    writeFileSync(file, JSON.stringify({ characters: [{ name: 'no prompt', description: 'x' }] }));
    await expect(startLlmStack({ ROLEPLAY_CHARACTERS_FILE: file })).rejects.toThrow(/broken\.json.*name must be|broken\.json.*prompt/);
  });
});
