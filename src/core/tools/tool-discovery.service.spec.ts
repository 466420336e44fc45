import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { GatewayModule } from '../../gateway.module';
import { Tool } from './tool.decorator';
import { ToolRegistryService } from './tool-registry.service';

@Injectable()
class GreetingTools {
  private readonly greeting = 'Hello';

  @Tool({
    name: 'greet',
    description: 'Greets someone',
    inputSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
  })
  greet({ name }: { name: string }): string {
    return `${this.greeting}, ${name}!`;
  }

  notATool(): string {
    return 'ignored';
  }
}

@Module({ providers: [GreetingTools] })
class GreetingModule {}

@Injectable()
class BrokenTools {
  @Tool({ name: 'bad name', description: '', inputSchema: { type: 'object' } })
  broken(): void {}
}

describe('ToolDiscoveryService', () => {
  it('registers @Tool() methods of any module, bound to their instance', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [GatewayModule.forRoot({ settings: { CLOUD_PORT: 0 } }), GreetingModule],
    }).compile();
    await moduleRef.init();
    const registry = moduleRef.get(ToolRegistryService);
    expect(registry.get('greet')).toMatchObject({ source: 'module', description: 'Greets someone' });
    expect(registry.get('get_current_time')).toMatchObject({ source: 'builtin' });
    expect(registry.run(registry.prepare('greet', { name: 'Ada' }))).toMatchObject({ ok: true, value: 'Hello, Ada!' });
    expect(registry.list().map((t) => t.name)).not.toContain('notATool');
    await moduleRef.close();
  });

  it('stops the boot on a bad declaration, naming the method', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [GatewayModule.forRoot({}), { module: class BrokenModule {}, providers: [BrokenTools] }],
    }).compile();
    await expect(moduleRef.init()).rejects.toThrow(/BrokenTools\.broken.*Tool name "bad name"/);
    // close() re-awaits the failed initialisation, so it rejects with the same error.
    await expect(moduleRef.close()).rejects.toThrow(/BrokenTools/);
  });
});
