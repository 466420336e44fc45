import { createServer, Server } from 'http';
import type { AddressInfo } from 'net';

const PLACES: Record<string, { name: string; latitude: number; longitude: number; country: string; timezone: string }> = {
  beijing: { name: 'Beijing', latitude: 39.9075, longitude: 116.39723, country: 'China', timezone: 'Asia/Shanghai' },
  北京: { name: '北京', latitude: 39.9075, longitude: 116.39723, country: '中国', timezone: 'Asia/Shanghai' },
  paris: { name: 'Paris', latitude: 48.85341, longitude: 2.3488, country: 'France', timezone: 'Europe/Paris' },
  hangzhou: { name: 'Hangzhou', latitude: 30.29365, longitude: 120.16142, country: 'China', timezone: 'Asia/Shanghai' },
};

/**
 * Open-Meteo's geocoding and forecast APIs, and an ipwho.is-style IP geolocation service, as a
 * local server with fixed data, so the weather and location tools run for real without the
 * internet. `unavailable` makes every endpoint answer 503.
 */
export class FakeOpenMeteo {
  readonly requests: URL[] = [];
  unavailable = false;

  private constructor(private readonly server: Server) {}

  static async start(): Promise<FakeOpenMeteo> {
    const server = createServer();
    const fake = new FakeOpenMeteo(server);
    server.on('request', (request, response) => {
      const url = new URL(request.url ?? '/', 'http://fake');
      fake.requests.push(url);
      const { status, body } = fake.answer(url);
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return fake;
  }

  private get base(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** The gateway settings that point its tools here. */
  get settings() {
    return {
      WEATHER_GEOCODING_URL: `${this.base}/v1/search`,
      WEATHER_FORECAST_URL: `${this.base}/v1/forecast`,
      LOCATION_PROVIDER_URL: `${this.base}/ip`,
    };
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private answer(url: URL): { status: number; body: unknown } {
    if (this.unavailable) return { status: 503, body: { error: true, reason: 'Service temporarily unavailable' } };
    switch (url.pathname) {
      case '/v1/search': {
        const place = PLACES[(url.searchParams.get('name') ?? '').toLowerCase()];
        return { status: 200, body: place ? { results: [{ id: 1, ...place }] } : { generationtime_ms: 0.1 } };
      }
      case '/v1/forecast': {
        const latitude = Number(url.searchParams.get('latitude'));
        const day = url.searchParams.get('start_date');
        if (!Number.isFinite(latitude) || Math.abs(latitude) > 90 || !day) {
          return { status: 400, body: { error: true, reason: 'Latitude must be in range of -90 to 90°.' } };
        }
        const body: Record<string, unknown> = {
          latitude,
          daily: {
            time: [day],
            weather_code: [61],
            temperature_2m_max: [25.1],
            temperature_2m_min: [14.3],
            precipitation_probability_max: [40],
            wind_speed_10m_max: [18.2],
          },
        };
        if (url.searchParams.has('current')) {
          body.current = { temperature_2m: 22.5, relative_humidity_2m: 45, weather_code: 0, wind_speed_10m: 10.4 };
        }
        return { status: 200, body };
      }
      case '/ip':
        return {
          status: 200,
          body: {
            success: true,
            city: 'Hangzhou',
            region: 'Zhejiang',
            country: 'China',
            latitude: 30.29365,
            longitude: 120.16142,
            timezone: { id: 'Asia/Shanghai' },
          },
        };
      default:
        return { status: 404, body: { error: true, reason: 'Not found' } };
    }
  }
}
