import { Global, Module } from '@nestjs/common';
import { GatewayState } from './gateway-state';

/** {@link GatewayState}, for every module: the one place that decides memory or Redis. */
@Global()
@Module({ providers: [GatewayState], exports: [GatewayState] })
export class StateModule {}
