import { resolve } from 'path';
import { InvalidConfigurationError } from './environment';
import { loadGatewayConfig } from './gateway-config';

describe('gateway configuration', () => {
  it("uses the specs' defaults when nothing is set", () => {
    const config = loadGatewayConfig({});
    expect(config.server).toMatchObject({
      // Loopback while no token is configured (the spec's 0.0.0.0 would open the gateway to anyone).
      host: '127.0.0.1',
      port: 9400,
      pingIntervalMs: 30_000,
      pingTimeoutMs: 300_000,
      maxConnections: 100,
      maxMessageBytes: 1_048_576,
      logFormat: 'json',
    });
    expect(config.server.logLevels).toEqual(['fatal', 'error', 'warn', 'log']);
    expect(config.session.timeoutMs).toBe(3_600_000);
    expect(config.llm).toMatchObject({ model: 'Qwen3-30B-A3B', timeoutMs: 120_000, temperature: 0.7, maxTokens: 2048, enableContext: false });
    expect(config.mcp).toMatchObject({ enabled: true, serverName: 'arcs-mini-mcp-server', protocolVersion: '2024-11-05' });
    expect(config.mcp.ws).toMatchObject({
      host: '127.0.0.1',
      port: 8765,
      heartbeatIntervalMs: 30_000,
      heartbeatTimeoutMs: 90_000,
      authTimeoutMs: 30_000,
      maxConnections: 1,
    });
    expect(config.clientTools).toEqual({ enabled: true, maxCount: 32, timeoutMs: 30_000, resultQueueSize: 10 });
    expect(config.tools.serverToolTimeoutMs).toBe(10_000);
    expect(config.auth.tokens).toEqual([]);
  });

  it('listens everywhere by default once tokens are set, and refuses to listen beyond loopback without them unless told to', () => {
    expect(loadGatewayConfig({ AUTH_TOKENS: 'secret' }).server.host).toBe('0.0.0.0');
    expect(loadGatewayConfig({ AUTH_TOKENS_FILE: '/etc/gateway/tokens.yaml' }).server.host).toBe('0.0.0.0');
    expect(loadGatewayConfig({ CLOUD_HOST: 'localhost' }).server.host).toBe('localhost');
    expect(() => loadGatewayConfig({ CLOUD_HOST: '0.0.0.0' })).toThrow(/CLOUD_HOST=0\.0\.0\.0 with no AUTH_TOKENS .*ALLOW_UNAUTHENTICATED=true/);
    expect(loadGatewayConfig({ CLOUD_HOST: '0.0.0.0', ALLOW_UNAUTHENTICATED: 'true' }).server.host).toBe('0.0.0.0');
    expect(loadGatewayConfig({ CLOUD_HOST: '0.0.0.0', AUTH_TOKENS: 'secret' }).server.host).toBe('0.0.0.0');
  });

  it('reads env strings into typed values, seconds into milliseconds', () => {
    const config = loadGatewayConfig({
      CLOUD_PORT: '9500',
      CLOUD_PING_INTERVAL: '0.5',
      LLM_ENABLE_CONTEXT: 'TRUE',
      MCP_ENABLED: 'off',
      AUTH_TOKENS: ' a , b,,c ',
      CLOUD_LOG_LEVEL: 'debug',
      CLOUD_LOG_FORMAT: 'TEXT',
    });
    expect(config.server.port).toBe(9500);
    expect(config.server.pingIntervalMs).toBe(500);
    expect(config.llm.enableContext).toBe(true);
    expect(config.mcp.enabled).toBe(false);
    expect(config.auth.tokens).toEqual(['a', 'b', 'c']);
    expect(config.server.logLevels).toContain('debug');
    expect(config.server.logFormat).toBe('text');
  });

  it('serves the web console unless CONSOLE_ENABLED is false', () => {
    expect(loadGatewayConfig({}).console.enabled).toBe(true);
    expect(loadGatewayConfig({ CONSOLE_ENABLED: 'false' }).console.enabled).toBe(false);
    expect(() => loadGatewayConfig({ CONSOLE_ENABLED: 'sometimes' })).toThrow(/CONSOLE_ENABLED/);
  });

  it('serves /metrics on CLOUD_PORT unless METRICS_PORT names a listener of its own, on loopback by default', () => {
    expect(loadGatewayConfig({}).metrics).toEqual({ port: 0, host: '127.0.0.1' });
    expect(loadGatewayConfig({ METRICS_PORT: '9464', METRICS_HOST: '0.0.0.0' }).metrics).toEqual({ port: 9464, host: '0.0.0.0' });
    expect(() => loadGatewayConfig({ METRICS_PORT: '70000' })).toThrow(/METRICS_PORT/);
    expect(() => loadGatewayConfig({ METRICS_PORT: 'prometheus' })).toThrow(/METRICS_PORT/);
  });

  it('reads the readiness checks to leave out, and refuses one it does not know', () => {
    expect(loadGatewayConfig({}).readiness.ignore).toEqual([]);
    expect(loadGatewayConfig({ READINESS_IGNORE: 'model, mcp_upstreams' }).readiness.ignore).toEqual(['model', 'mcp_upstreams']);
    expect(() => loadGatewayConfig({ READINESS_IGNORE: 'model,disk' })).toThrow(
      /READINESS_IGNORE must be a comma-separated list of: model, redis, mcp_upstreams/,
    );
  });

  it('treats an empty variable as unset', () => {
    expect(loadGatewayConfig({ LLM_API_KEY: '', CLOUD_PORT: '' }).server.port).toBe(9400);
  });

  it('lets explicit overrides win over the environment', () => {
    expect(loadGatewayConfig({ CLOUD_PORT: '9500' }, { CLOUD_PORT: 0 }).server.port).toBe(0);
  });

  it.each([
    ['CLOUD_PORT', 'abc'],
    ['CLOUD_PORT', '70000'],
    ['CLOUD_PORT', '9400abc'],
    ['LLM_TEMPERATURE', '1.5'],
    ['LLM_ENABLE_CONTEXT', 'maybe'],
    ['LLM_BASE_URL', 'not a url'],
    ['CLOUD_LOG_LEVEL', 'LOUD'],
    ['MCP_PROTOCOL_VERSION', 'latest'],
    ['DEFAULT_TIMEZONE', 'Mars/Olympus'],
  ])('refuses %s=%s with a message naming the variable', (name, value) => {
    expect(() => loadGatewayConfig({ [name]: value })).toThrow(InvalidConfigurationError);
    expect(() => loadGatewayConfig({ [name]: value })).toThrow(new RegExp(`${name}.*\\(got "${value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"\\)|${name}`));
  });

  it('reads the upstream MCP settings: an absolute file path, seconds into milliseconds, calls timed like server tools by default', () => {
    expect(loadGatewayConfig({}).mcp.upstream).toEqual({
      serversFile: undefined,
      connectTimeoutMs: 30_000,
      callTimeoutMs: 10_000,
      pingIntervalMs: 30_000,
      retryMinMs: 1_000,
      retryMaxMs: 60_000,
      maxResultBytes: 2_097_152,
    });
    const upstream = loadGatewayConfig({ MCP_SERVERS_FILE: 'mcp.json', MCP_UPSTREAM_CALL_TIMEOUT: '45', MCP_UPSTREAM_PING_INTERVAL: '0' }).mcp.upstream;
    expect(upstream).toMatchObject({ serversFile: resolve('mcp.json'), callTimeoutMs: 45_000, pingIntervalMs: 0 });
    expect(() => loadGatewayConfig({ MCP_UPSTREAM_RETRY_MIN: '10', MCP_UPSTREAM_RETRY_MAX: '5' })).toThrow(
      /MCP_UPSTREAM_RETRY_MAX \(5\) must not be less than MCP_UPSTREAM_RETRY_MIN \(10\)/,
    );
  });

  it('reads the voice activity settings, and refuses an end threshold above the start threshold', () => {
    expect(loadGatewayConfig({}).voice.vad).toEqual({ startThreshold: 0.5, endThreshold: 0.35, minSpeechMs: 250, silenceMs: 700 });
    expect(loadGatewayConfig({ VAD_THRESHOLD: '0.6', VAD_SILENCE_MS: '500' }).voice.vad).toMatchObject({ startThreshold: 0.6, silenceMs: 500 });
    expect(() => loadGatewayConfig({ VAD_THRESHOLD: '0.3' })).toThrow(/VAD_END_THRESHOLD \(0.35\) must not be above VAD_THRESHOLD \(0.3\)/);
    expect(() => loadGatewayConfig({ VAD_SILENCE_MS: '10' })).toThrow(/VAD_SILENCE_MS/);
  });

  it('reads the longest utterance in seconds and the pre-roll in milliseconds', () => {
    expect(loadGatewayConfig({}).voice).toMatchObject({ maxUtteranceMs: 30_000, prerollMs: 300 });
    expect(loadGatewayConfig({ VOICE_MAX_UTTERANCE_S: '12', VOICE_PREROLL_MS: '0' }).voice).toMatchObject({ maxUtteranceMs: 12_000, prerollMs: 0 });
    expect(() => loadGatewayConfig({ VOICE_MAX_UTTERANCE_S: '0' })).toThrow(/VOICE_MAX_UTTERANCE_S/);
  });

  it("refuses the MCP spec's placeholder token unless it is explicitly allowed", () => {
    expect(() => loadGatewayConfig({ MCP_WS_AUTH_TOKEN: 'ChangeMe!' })).toThrow(/MCP_WS_AUTH_TOKEN is the spec's placeholder "ChangeMe!"/);
    expect(loadGatewayConfig({ MCP_WS_AUTH_TOKEN: 'ChangeMe!', MCP_WS_ALLOW_DEFAULT_TOKEN: 'true' }).mcp.ws.authToken).toBe('ChangeMe!');
  });

  it('refuses an MCP protocol version the SDK cannot speak while MCP is on, naming MCP_PROTOCOL_VERSION', () => {
    expect(() => loadGatewayConfig({ MCP_PROTOCOL_VERSION: '2023-01-01' })).toThrow(/MCP_PROTOCOL_VERSION must be one of .*2024-11-05.* \(got "2023-01-01"\)/);
    expect(loadGatewayConfig({ MCP_PROTOCOL_VERSION: '2025-03-26' }).mcp.protocolVersion).toBe('2025-03-26');
    expect(loadGatewayConfig({ MCP_PROTOCOL_VERSION: '2023-01-01', MCP_ENABLED: 'false' }).mcp.enabled).toBe(false);
  });

  it('refuses a system prompt given twice', () => {
    expect(() => loadGatewayConfig({ LLM_SYSTEM_PROMPT: 'Be brief.', LLM_SYSTEM_PROMPT_FILE: '/etc/prompt.txt' })).toThrow(
      /Set LLM_SYSTEM_PROMPT or LLM_SYSTEM_PROMPT_FILE, not both/,
    );
  });

  it('takes an introspection endpoint only with the client it asks as and an audience', () => {
    const url = 'https://login.example.com/token/introspection';
    expect(() => loadGatewayConfig({ OIDC_INTROSPECTION_URL: url, PUBLIC_URL: 'https://gw.example.com' })).toThrow(
      /OIDC_INTROSPECTION_URL needs OIDC_INTROSPECTION_CLIENT_ID and OIDC_INTROSPECTION_CLIENT_SECRET/,
    );
    expect(() => loadGatewayConfig({ OIDC_INTROSPECTION_URL: url, OIDC_INTROSPECTION_CLIENT_ID: 'gw', OIDC_INTROSPECTION_CLIENT_SECRET: 's' })).toThrow(
      /OIDC_INTROSPECTION_URL needs the audience/,
    );
    const config = loadGatewayConfig({
      OIDC_INTROSPECTION_URL: url,
      OIDC_INTROSPECTION_CLIENT_ID: 'gw',
      OIDC_INTROSPECTION_CLIENT_SECRET: 's',
      PUBLIC_URL: 'https://gw.example.com',
    });
    expect(config.auth.oidc.introspection).toEqual({ url, clientId: 'gw', clientSecret: 's' });
    expect(config.auth.oidc.audiences).toEqual(['https://gw.example.com', 'https://gw.example.com/mcp']);
  });

  it('reports bad variables and contradictory settings together, and no contradiction between variables already reported', () => {
    try {
      loadGatewayConfig({
        CLOUD_PORT: 'abc',
        MCP_UPSTREAM_RETRY_MIN: '10',
        MCP_UPSTREAM_RETRY_MAX: '5',
        MCP_WS_AUTH_TOKEN: 'ChangeMe!',
        CLOUD_HOST: '0.0.0.0',
        ALLOW_UNAUTHENTICATED: 'maybe',
      });
      fail('expected an error');
    } catch (error) {
      const { problems } = error as InvalidConfigurationError;
      expect(problems).toEqual([
        expect.stringMatching(/^CLOUD_PORT must be an integer/),
        expect.stringMatching(/^ALLOW_UNAUTHENTICATED must be a boolean/),
        expect.stringMatching(/^MCP_UPSTREAM_RETRY_MAX \(5\) must not be less than MCP_UPSTREAM_RETRY_MIN \(10\)/),
        expect.stringMatching(/^MCP_WS_AUTH_TOKEN is the spec's placeholder/),
      ]);
    }
  });

  it('reports every bad variable at once', () => {
    try {
      loadGatewayConfig({ CLOUD_PORT: '-1', CLIENT_TOOLS_MAX_COUNT: '0' });
      fail('expected an error');
    } catch (error) {
      expect((error as InvalidConfigurationError).problems).toHaveLength(2);
      expect((error as Error).message).toMatch(/CLOUD_PORT/);
      expect((error as Error).message).toMatch(/CLIENT_TOOLS_MAX_COUNT/);
    }
  });

  it('leaves both speech engines off until their base URLs are set', () => {
    expect(loadGatewayConfig({}).speech).toEqual({ recognizer: undefined, synthesizer: undefined });
    expect(loadGatewayConfig({ STT_BASE_URL: '', TTS_BASE_URL: '' }).speech).toEqual({ recognizer: undefined, synthesizer: undefined });
  });

  it('maps the speech settings, durations in milliseconds', () => {
    const { speech } = loadGatewayConfig({
      STT_BASE_URL: 'http://stt.local:8000/v1/',
      STT_LANGUAGE: 'fr',
      STT_TIMEOUT: '4',
      TTS_BASE_URL: 'http://tts.local:8880/v1/',
      TTS_FORMAT: 'wav',
      TTS_SPEED: '1.25',
      TTS_TIMEOUT: '2.5',
    });
    expect(speech.recognizer).toEqual({ baseUrl: 'http://stt.local:8000/v1/', model: 'whisper-1', language: 'fr', apiKey: undefined, timeoutMs: 4000 });
    expect(speech.synthesizer).toEqual({
      baseUrl: 'http://tts.local:8880/v1/',
      model: 'tts-1',
      voice: 'alloy',
      format: 'wav',
      sampleRate: 24000,
      apiKey: undefined,
      idleTimeoutMs: 2500,
      speed: 1.25,
    });
  });

  it('names the speech settings that are wrong', () => {
    expect(() => loadGatewayConfig({ STT_BASE_URL: 'stt.local', STT_LANGUAGE: 'French', TTS_FORMAT: 'mp3', TTS_SPEED: '9' })).toThrow(
      expect.objectContaining({
        problems: [
          expect.stringMatching(/^STT_BASE_URL must be a URL/),
          expect.stringMatching(/^STT_LANGUAGE must be an ISO-639-1 code/),
          expect.stringMatching(/^TTS_FORMAT must be pcm or wav/),
          expect.stringMatching(/^TTS_SPEED must not be greater than 4/),
        ],
      }),
    );
  });
});
