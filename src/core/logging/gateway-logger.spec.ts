import { GatewayLogger } from './gateway-logger';

/** Records what the logger prints instead of writing it. */
function recordingLogger(level: 'INFO' | 'DEBUG') {
  const logLevels = level === 'DEBUG' ? (['debug', 'log', 'warn', 'error', 'fatal'] as const) : (['log', 'warn', 'error', 'fatal'] as const);
  const logger = new GatewayLogger({ logLevels: [...logLevels], logFormat: 'json' });
  const printed: { level: string; context: string; message: unknown }[] = [];
  jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    const record = JSON.parse(String(chunk));
    printed.push({ level: record.level, context: record.context, message: record.message });
    return true;
  });
  return { logger, printed };
}

describe('GatewayLogger', () => {
  afterEach(() => jest.restoreAllMocks());

  it("demotes Nest's route-mapping and subscription lines to debug, and keeps the gateway's own", () => {
    const { logger, printed } = recordingLogger('INFO');
    logger.log('Mapped {/tools, GET} route', 'RouterExplorer');
    logger.log('McpGateway subscribed to the "#malformed" message', 'WebSocketsController');
    logger.log('AppModule dependencies initialized', 'InstanceLoader');
    logger.log('Discovered 12 tool(s)', 'ToolDiscovery');
    logger.warn('a warning of Nest stays a warning', 'RoutesResolver');
    expect(printed).toEqual([
      { level: 'log', context: 'ToolDiscovery', message: 'Discovered 12 tool(s)' },
      { level: 'warn', context: 'RoutesResolver', message: 'a warning of Nest stays a warning' },
    ]);
  });

  it('shows them at CLOUD_LOG_LEVEL=DEBUG', () => {
    const { logger, printed } = recordingLogger('DEBUG');
    logger.log('Mapped {/tools, GET} route', 'RouterExplorer');
    expect(printed).toEqual([{ level: 'debug', context: 'RouterExplorer', message: 'Mapped {/tools, GET} route' }]);
  });
});
