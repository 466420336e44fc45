import { Module } from '@nestjs/common';
import { CountdownTools } from './countdown.tools';
import { TimeTools } from './time.tools';

/** The tools the gateway ships (source `builtin`), found by the same `@Tool()` discovery as users' tools. */
@Module({ providers: [TimeTools, CountdownTools] })
export class BuiltinToolsModule {}
