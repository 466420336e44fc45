import { Injectable, Module } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { GatewayModule, Tool, ToolCatalogueChange, ToolError, ToolRegistryService } from '../../src';
import { LiteMcpClient } from '../support/litemcp-client';
import { RunningGateway, startGateway, TEST_SETTINGS } from '../support/gateway';
import { TestSocket } from '../support/test-socket';

/** A user's own tools, written against the package's public exports only. */
@Injectable()
class WeatherStationTools {
  private readonly readings = new Map([['kitchen', 21.5]]);

  @Tool({
    name: 'station.temperature',
    description: 'Reads the temperature of a room',
    inputSchema: {
      type: 'object',
      properties: { room: { type: 'string', description: 'Room name' }, unit: { type: 'string', enum: ['C', 'F'], default: 'C' } },
      required: ['room'],
    },
  })
  temperature({ room, unit }: { room: string; unit: 'C' | 'F' }) {
    const celsius = this.readings.get(room);
    if (celsius === undefined) throw new ToolError(`No sensor in "${room}"`);
    return { room, value: unit === 'F' ? celsius * 1.8 + 32 : celsius, unit };
  }
}

@Module({ providers: [WeatherStationTools] })
class WeatherStationModule {}

describe('extending the gateway with your own Nest module', () => {
  let gateway: RunningGateway;

  beforeAll(async () => {
    gateway = await startGateway({}, [WeatherStationModule]);
  });
  afterAll(() => gateway.close());

  it("serves a @Tool() of the user's module on LiteMCP without touching the gateway", async () => {
    const client = await LiteMcpClient.connect(gateway.ws('/litemcp/station.temperature'));
    expect((await client.info()).parameters.map((p: { name: string }) => p.name)).toEqual(['room', 'unit']);
    const result = await client.call('station.temperature', ['kitchen', 'F']);
    expect(JSON.parse(result.response.content[0].data)).toEqual({ room: 'kitchen', value: 70.7, unit: 'F' });
    expect((await client.call('station.temperature', ['attic'])).response).toMatchObject({
      error: true,
      content: [{ data: 'No sensor in "attic"' }],
    });
    client.close();
  });

  it('adds and removes tools at run time, announcing each change', async () => {
    const registry = gateway.app.get(ToolRegistryService);
    const changes: ToolCatalogueChange[] = [];
    const subscription = registry.changes.subscribe((change) => changes.push(change));

    await expect(TestSocket.open(gateway.ws('/litemcp/dice.roll'))).rejects.toMatchObject({ status: 404 });
    registry.register({
      name: 'dice.roll',
      description: 'Rolls a die',
      inputSchema: { type: 'object', properties: { sides: { type: 'integer', minimum: 2 } }, required: ['sides'] },
      source: 'mcp:dice',
      handler: ({ sides }) => Math.ceil(Math.random() * (sides as number)),
    });
    const client = await LiteMcpClient.connect(gateway.ws('/litemcp/dice.roll'));
    const rolled = Number((await client.call('dice.roll', ['6'])).response.content[0].data);
    expect(rolled).toBeGreaterThanOrEqual(1);
    expect(rolled).toBeLessThanOrEqual(6);
    expect((await client.call('dice.roll', ['1'])).response.content[0].data).toMatch(/argument "sides" must be >= 2/);

    expect(registry.unregisterSource('mcp:dice')).toBe(1);
    expect((await client.call('dice.roll', ['6'])).response).toMatchObject({ error: true, content: [{ data: 'Unknown tool "dice.roll"' }] });
    client.close();
    expect(changes.map((c) => `${c.type}:${c.tool.name}`)).toEqual(['added:dice.roll', 'removed:dice.roll']);
    subscription.unsubscribe();
  });
});

describe('GatewayModule.forRootAsync', () => {
  it('takes its settings from a factory with injected dependencies', async () => {
    const gateway = await startGateway(
      {},
      [],
      GatewayModule.forRootAsync({
        imports: [ConfigModule.forFeature(() => ({ deviceToken: 'from-factory' }))],
        inject: [ConfigService],
        useFactory: (config: ConfigService) => ({
          settings: { ...TEST_SETTINGS, AUTH_TOKENS: config.get<string>('deviceToken') },
        }),
      }),
    );
    try {
      await expect(TestSocket.open(gateway.ws('/litemcp/get_current_time'))).rejects.toMatchObject({ status: 401 });
      const socket = await TestSocket.open(gateway.ws('/litemcp/get_current_time'), {
        headers: { Authorization: 'Bearer from-factory' },
      });
      await socket.close();
    } finally {
      await gateway.close();
    }
  });
});
