import { Module } from '@nestjs/common';
import { CalculatorTools } from './calculator.tools';

/**
 * An example of adding tools without touching the gateway's code: import this module next to
 * `GatewayModule.forRoot()` and `calculator` appears on every protocol.
 */
@Module({ providers: [CalculatorTools] })
export class CalculatorModule {}
