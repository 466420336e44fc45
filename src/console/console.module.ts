import { Module } from '@nestjs/common';
import { ConsoleAssets } from './console-assets';
import { ConsoleController } from './console.controller';
import { ConsoleEnabledGuard } from './console-enabled.guard';

/** The web test console (`CONSOLE_ENABLED`), served as static files at `/` and `/console`. */
@Module({
  controllers: [ConsoleController],
  providers: [ConsoleAssets, ConsoleEnabledGuard],
})
export class ConsoleModule {}
