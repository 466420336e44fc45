import { Inject, Injectable } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { zonedTime } from '../core/time/clock';
import { isKnownTimeZone } from '../shared/time-zone';
import type { ToolCallContext } from '../core/tools/tool-definition';
import { BuiltinTool } from '../core/tools/tool.decorator';
import { ToolError } from '../core/tools/tool-error';
import { LocationService } from './location.service';
import { describeWeatherCode } from './weather-codes';

/** Days Open-Meteo's forecast API covers around today. */
const PAST_DAYS = 92;
const FORECAST_DAYS = 15;

const RELATIVE_DAYS: Record<string, number> = {
  today: 0,
  今天: 0,
  tomorrow: 1,
  明天: 1,
  'day after tomorrow': 2,
  后天: 2,
  yesterday: -1,
  昨天: -1,
};

interface ResolvedPlace {
  name: string;
  country?: string;
  latitude: number;
  longitude: number;
  timezone: string;
}

export interface WeatherReport {
  city: string;
  country?: string;
  date: string;
  condition: string;
  /** Now, for today; the day's mean of max and min otherwise. */
  temperature: number;
  temperature_max: number;
  temperature_min: number;
  humidity?: number;
  wind_speed_kmh?: number;
  precipitation_probability?: number;
  unit: 'celsius';
  source: 'open-meteo';
}

/** `YYYY-MM-DD` plus `days`, in calendar terms. */
function addDays(date: string, days: number): string {
  const moment = new Date(`${date}T00:00:00Z`);
  moment.setUTCDate(moment.getUTCDate() + days);
  return moment.toISOString().slice(0, 10);
}

function daysBetween(from: string, to: string): number {
  return Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86_400_000);
}

/**
 * The LLM gateway spec's `get_weather` (7.2), real: Open-Meteo's keyless geocoding and forecast
 * APIs (`WEATHER_GEOCODING_URL`, `WEATHER_FORECAST_URL`), for a named city or, without one,
 * the assistant's location.
 */
@Injectable()
export class WeatherTools {
  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    private readonly location: LocationService,
  ) {}

  @BuiltinTool({
    name: 'get_weather',
    presentation: { title: 'Weather', annotations: { readOnlyHint: true, openWorldHint: true } },
    description:
      'Get the weather for a city on a day: condition, temperature (°C), humidity, wind and chance of rain. ' +
      'Works for today, past days and up to 15 days ahead.',
    inputSchema: {
      type: 'object',
      properties: {
        city: { type: 'string', description: "City name in any language, e.g. 北京 or Paris; the assistant's location when omitted" },
        date: { type: 'string', description: 'YYYY-MM-DD, "today" or "tomorrow" (今天, 明天, 后天 work too); today when omitted' },
      },
      additionalProperties: false,
    },
    examples: [{ description: 'What is the weather in Beijing tomorrow?', arguments: { city: '北京', date: 'tomorrow' } }],
    tags: ['weather'],
  })
  async getWeather({ city, date }: { city?: string; date?: string }, { signal }: ToolCallContext): Promise<WeatherReport> {
    const place = await this.resolvePlace(city?.trim() || undefined, signal);
    const today = zonedTime(new Date(), place.timezone).date;
    const day = this.resolveDate(date, today);
    const isToday = day === today;
    const query = new URLSearchParams({
      latitude: String(place.latitude),
      longitude: String(place.longitude),
      timezone: 'auto',
      start_date: day,
      end_date: day,
      daily: 'weather_code,temperature_2m_max,temperature_2m_min,precipitation_probability_max,wind_speed_10m_max',
    });
    if (isToday) query.set('current', 'temperature_2m,relative_humidity_2m,weather_code,wind_speed_10m');
    const forecast = await this.fetchJson(`${this.config.tools.weather.forecastUrl}?${query}`, 'weather', signal);
    const daily = forecast.daily as Record<string, unknown[]> | undefined;
    const current = forecast.current as Record<string, number> | undefined;
    if (!daily || !Array.isArray(daily.time) || daily.time.length === 0) {
      throw new ToolError('The weather service returned no forecast for that day');
    }
    const max = daily.temperature_2m_max?.[0] as number;
    const min = daily.temperature_2m_min?.[0] as number;
    return {
      city: place.name,
      country: place.country,
      date: day,
      condition: describeWeatherCode(isToday && current ? current.weather_code : daily.weather_code?.[0]),
      temperature: isToday && current ? current.temperature_2m : Math.round(((max + min) / 2) * 10) / 10,
      temperature_max: max,
      temperature_min: min,
      humidity: isToday ? current?.relative_humidity_2m : undefined,
      wind_speed_kmh: isToday && current ? current.wind_speed_10m : (daily.wind_speed_10m_max?.[0] as number | undefined),
      precipitation_probability: (daily.precipitation_probability_max?.[0] as number | null) ?? undefined,
      unit: 'celsius',
      source: 'open-meteo',
    };
  }

  private resolveDate(date: string | undefined, today: string): string {
    const wanted = date?.trim().toLowerCase() || 'today';
    const day = wanted in RELATIVE_DAYS ? addDays(today, RELATIVE_DAYS[wanted]) : wanted;
    if (!/^\d{4}-\d{2}-\d{2}$/.test(day) || Number.isNaN(Date.parse(`${day}T00:00:00Z`))) {
      throw new ToolError(`Cannot read the date "${date}": use YYYY-MM-DD, "today" or "tomorrow"`);
    }
    const offset = daysBetween(today, day);
    if (offset > FORECAST_DAYS || offset < -PAST_DAYS) {
      throw new ToolError(`Weather is available from ${PAST_DAYS} days ago to ${FORECAST_DAYS} days ahead, not for ${day}`);
    }
    return day;
  }

  private async resolvePlace(city: string | undefined, signal?: AbortSignal): Promise<ResolvedPlace> {
    if (city === undefined) {
      const here = await this.location.locate(signal);
      if (here.latitude !== undefined && here.longitude !== undefined) {
        const timezone = here.timezone && isKnownTimeZone(here.timezone) ? here.timezone : this.config.tools.defaultTimezone;
        return { name: here.city ?? 'your location', country: here.country, latitude: here.latitude, longitude: here.longitude, timezone };
      }
      if (here.city === undefined) throw new ToolError("Say which city: the assistant's location is unknown");
      city = here.city;
    }
    const query = new URLSearchParams({ name: city, count: '1', format: 'json', language: /\p{Script=Han}/u.test(city) ? 'zh' : 'en' });
    const found = await this.fetchJson(`${this.config.tools.weather.geocodingUrl}?${query}`, 'geocoding', signal);
    const match = (found.results as Record<string, unknown>[] | undefined)?.[0];
    if (!match || typeof match.latitude !== 'number' || typeof match.longitude !== 'number') {
      throw new ToolError(`No place called "${city}" was found`);
    }
    const timezone = typeof match.timezone === 'string' && isKnownTimeZone(match.timezone) ? match.timezone : this.config.tools.defaultTimezone;
    return {
      name: typeof match.name === 'string' ? match.name : city,
      country: typeof match.country === 'string' ? match.country : undefined,
      latitude: match.latitude,
      longitude: match.longitude,
      timezone,
    };
  }

  private async fetchJson(url: string, service: string, signal?: AbortSignal): Promise<Record<string, unknown>> {
    let response: Response;
    try {
      response = await fetch(url, { signal, headers: { accept: 'application/json' } });
    } catch (error) {
      if (signal?.aborted) throw error;
      throw new ToolError(`The ${service} service could not be reached`);
    }
    const body = (await response.json().catch(() => ({}))) as Record<string, unknown>;
    if (!response.ok) {
      const reason = typeof body.reason === 'string' ? `: ${body.reason}` : '';
      throw new ToolError(`The ${service} service answered HTTP ${response.status}${reason}`);
    }
    return body;
  }
}
