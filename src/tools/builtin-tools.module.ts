import { Module } from '@nestjs/common';
import { AssistantModule } from '../assistant/assistant.module';
import { CountdownTools } from './countdown.tools';
import { LanguageTools } from './language.tools';
import { LocationService } from './location.service';
import { LocationTools } from './location.tools';
import { RoleplayTools } from './roleplay.tools';
import { TimeTools } from './time.tools';
import { WeatherTools } from './weather.tools';

/**
 * The tools the gateway ships (source `builtin`): the ten server tools of the LLM gateway spec
 * (7.2) and the streaming `countdown`, found by the same `@Tool()` discovery as users' tools.
 */
@Module({ imports: [AssistantModule], providers: [TimeTools, CountdownTools, LocationService, LocationTools, WeatherTools, LanguageTools, RoleplayTools] })
export class BuiltinToolsModule {}
