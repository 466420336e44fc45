import { Inject, Injectable } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { ToolError } from '../core/tools/tool-error';

export interface Place {
  city?: string;
  region?: string;
  country?: string;
  latitude?: number;
  longitude?: number;
  timezone?: string;
  source: 'configuration' | 'ip-geolocation';
}

/** How long an IP geolocation answer is reused: the server does not move often. */
const LOOKUP_TTL_MS = 60 * 60 * 1000;

/**
 * Where the assistant is: the `LOCATION_*` settings when a city or coordinates are configured,
 * otherwise the IP geolocation service at `LOCATION_PROVIDER_URL` (answers in the shape of
 * ipwho.is or ip-api.com are understood), cached for an hour.
 */
@Injectable()
export class LocationService {
  private cached?: { place: Place; at: number };

  constructor(@Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig) {}

  async locate(signal?: AbortSignal): Promise<Place> {
    const { city, country, latitude, longitude, providerUrl } = this.config.tools.location;
    if (city !== undefined || (latitude !== undefined && longitude !== undefined)) {
      return { city, country, latitude, longitude, source: 'configuration' };
    }
    if (!providerUrl) {
      throw new ToolError('The location is unknown: set LOCATION_CITY or LOCATION_PROVIDER_URL on the server');
    }
    if (this.cached && Date.now() - this.cached.at < LOOKUP_TTL_MS) return this.cached.place;
    const place = await this.lookUp(providerUrl, signal);
    this.cached = { place, at: Date.now() };
    return place;
  }

  private async lookUp(url: string, signal?: AbortSignal): Promise<Place> {
    let body: Record<string, unknown>;
    try {
      const response = await fetch(url, { signal, headers: { accept: 'application/json' } });
      if (!response.ok) throw new ToolError(`The location service answered HTTP ${response.status}`);
      body = (await response.json()) as Record<string, unknown>;
    } catch (error) {
      if (error instanceof ToolError || signal?.aborted) throw error;
      throw new ToolError('The location service could not be reached');
    }
    if (body.success === false || body.status === 'fail') {
      throw new ToolError(`The location service could not place this server${typeof body.message === 'string' ? `: ${body.message}` : ''}`);
    }
    const timezone = body.timezone as string | { id?: string } | undefined;
    return {
      city: text(body.city),
      region: text(body.region ?? body.regionName),
      country: text(body.country),
      latitude: number(body.latitude ?? body.lat),
      longitude: number(body.longitude ?? body.lon),
      timezone: typeof timezone === 'string' ? timezone : text(timezone?.id),
      source: 'ip-geolocation',
    };
  }
}

const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);
const number = (value: unknown): number | undefined => (typeof value === 'number' && Number.isFinite(value) ? value : undefined);
