import { Injectable } from '@nestjs/common';
import type { ToolCallContext } from '../core/tools/tool-definition';
import { BuiltinTool } from '../core/tools/tool.decorator';
import { LocationService, Place } from './location.service';

/** The LLM gateway spec's `get_location` (7.2). */
@Injectable()
export class LocationTools {
  constructor(private readonly location: LocationService) {}

  @BuiltinTool({
    name: 'get_location',
    presentation: { title: 'Location', annotations: { readOnlyHint: true, openWorldHint: true } },
    description: 'Get where the assistant is: city, region, country and coordinates.',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    tags: ['location'],
  })
  getLocation(_args: Record<string, never>, { signal }: ToolCallContext): Promise<Place> {
    return this.location.locate(signal);
  }
}
