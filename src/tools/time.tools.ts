import { Inject, Injectable } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { zonedTime, ZonedTime } from '../core/time/clock';
import { isKnownTimeZone } from '../shared/time-zone';
import { BuiltinTool } from '../core/tools/tool.decorator';
import { ToolError } from '../core/tools/tool-error';

/** The LLM gateway spec's `get_current_time` (7.2), with IANA zones. */
@Injectable()
export class TimeTools {
  constructor(@Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig) {}

  @BuiltinTool({
    name: 'get_current_time',
    presentation: { title: 'Current time', annotations: { readOnlyHint: true, openWorldHint: false } },
    description:
      "Get the current date and time. Give an IANA time zone (e.g. Asia/Shanghai, Europe/London, America/New_York) for a place; without one the server's zone is used.",
    inputSchema: {
      type: 'object',
      properties: {
        timezone: { type: 'string', description: 'IANA time zone name, e.g. Asia/Shanghai', examples: ['Asia/Shanghai'] },
      },
      additionalProperties: false,
    },
    outputSchema: {
      type: 'object',
      properties: {
        timezone: { type: 'string' },
        iso: { type: 'string' },
        date: { type: 'string' },
        time: { type: 'string' },
        weekday: { type: 'string' },
        utc_offset: { type: 'string' },
        unix_ms: { type: 'number' },
      },
      required: ['timezone', 'iso', 'date', 'time', 'weekday', 'utc_offset', 'unix_ms'],
    },
    examples: [{ description: 'What time is it in Shanghai?', arguments: { timezone: 'Asia/Shanghai' } }],
    tags: ['time'],
  })
  getCurrentTime({ timezone }: { timezone?: string }): ZonedTime {
    const zone = timezone?.trim() || this.config.tools.defaultTimezone;
    if (!isKnownTimeZone(zone)) {
      throw new ToolError(`Unknown time zone "${zone}". Use an IANA name such as "Europe/Paris" or "Asia/Shanghai".`);
    }
    return zonedTime(new Date(), zone);
  }
}
