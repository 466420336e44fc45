import { Module } from '@nestjs/common';
import { CalculatorModule } from './examples/calculator/calculator.module';
import { GatewayModule } from './gateway.module';

/**
 * The gateway as `npm start` runs it: everything configured from the environment, plus the
 * calculator example module. Your own app imports `GatewayModule.forRoot()` and your modules
 * instead (see docs/guides/extending.md).
 */
@Module({ imports: [GatewayModule.forRoot({}), CalculatorModule] })
export class AppModule {}
