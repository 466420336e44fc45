import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { TOOL_METADATA, ToolMetadata } from './tool.decorator';
import { ToolRegistryService } from './tool-registry.service';

/**
 * Finds every `@Tool()` method on the app's providers at bootstrap and adds it to the
 * catalogue. A bad declaration (invalid name or schema, a name used twice) stops the boot with
 * a message naming the provider and method, rather than leaving a tool silently missing.
 */
@Injectable()
export class ToolDiscoveryService implements OnModuleInit {
  private readonly logger = new Logger('ToolDiscovery');

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly reflector: Reflector,
    private readonly registry: ToolRegistryService,
  ) {}

  onModuleInit(): void {
    let count = 0;
    for (const wrapper of this.discovery.getProviders()) {
      const { instance } = wrapper;
      if (!instance || typeof instance !== 'object') continue;
      const prototype = Object.getPrototypeOf(instance);
      if (!prototype) continue;
      for (const methodName of this.scanner.getAllMethodNames(prototype)) {
        const method = instance[methodName];
        const metadata = this.reflector.get<ToolMetadata | undefined>(TOOL_METADATA, method);
        if (!metadata) continue;
        const where = `${wrapper.name ?? prototype.constructor?.name}.${methodName}`;
        if (!wrapper.isDependencyTreeStatic()) {
          throw new Error(`@Tool() ${where}: tools must live on singleton providers, not request-scoped ones`);
        }
        try {
          this.registry.register({
            ...metadata,
            source: metadata.source ?? 'module',
            handler: (args, context) => method.call(instance, args, context),
          });
        } catch (error) {
          throw new Error(`@Tool() ${where}: ${(error as Error).message}`);
        }
        count += 1;
      }
    }
    this.logger.log(`Discovered ${count} tool(s)`);
  }
}
