import type { Metric, Registry } from 'prom-client';

/**
 * Counter and histogram families for the hot paths, whose series are plain objects bound once:
 * a call is an addition on a field. prom-client's own label children hash and validate their
 * label values again on every `inc()` and `observe()` (about 1.2 µs for what one tool call
 * records, measured), which is several percent of a tool call; these cost tens of nanoseconds.
 * They join the app's prom-client `Registry` like its own metrics (`get()` returns what
 * prom-client's metrics return), so the registry renders and serves them with the rest.
 */

type Labels = Record<string, string>;

interface RenderedValue {
  value: number;
  labels: Labels;
  metricName?: string;
}

abstract class BoundFamily<Series extends { labels: Labels; reset(): void }> {
  abstract readonly type: 'counter' | 'histogram';
  readonly aggregator = 'sum';
  private readonly series = new Map<string, Series>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly string[],
    registry: Registry,
  ) {
    registry.registerMetric(this as unknown as Metric);
  }

  /** The series of these label values (in `labelNames` order), made on first use: keep it. */
  bind(...values: string[]): Series {
    const key = values.join('\u0000');
    let series = this.series.get(key);
    if (!series) {
      if (values.length !== this.labelNames.length) throw new Error(`${this.name} takes ${this.labelNames.length} label values`);
      const labels = Object.fromEntries(this.labelNames.map((name, index) => [name, values[index]]));
      this.series.set(key, (series = this.create(labels)));
    }
    return series;
  }

  /** What prom-client's registry reads when it renders the family. */
  get(): { name: string; help: string; type: string; aggregator: string; values: RenderedValue[] } {
    const values = [...this.series.values()].flatMap((series) => this.render(series));
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** Zeroes every series (not drops them: their holders keep counting on them). */
  reset(): void {
    this.series.forEach((series) => series.reset());
  }

  protected abstract create(labels: Labels): Series;
  protected abstract render(series: Series): RenderedValue[];
}

export class CounterSeries {
  value = 0;

  constructor(readonly labels: Labels) {}

  inc(by = 1): void {
    this.value += by;
  }

  reset(): void {
    this.value = 0;
  }
}

export class HistogramSeries {
  /** Observations per bucket (not cumulative), the last for those above every bound. */
  readonly counts: number[];
  sum = 0;
  count = 0;

  constructor(
    readonly labels: Labels,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Array<number>(bounds.length + 1).fill(0);
  }

  observe(value: number): void {
    const { bounds } = this;
    let index = 0;
    while (index < bounds.length && value > bounds[index]) index += 1;
    this.counts[index] += 1;
    this.sum += value;
    this.count += 1;
  }

  reset(): void {
    this.counts.fill(0);
    this.sum = 0;
    this.count = 0;
  }
}

export class BoundCounter extends BoundFamily<CounterSeries> {
  readonly type = 'counter';

  protected create(labels: Labels): CounterSeries {
    return new CounterSeries(labels);
  }

  protected render(series: CounterSeries): RenderedValue[] {
    return [{ value: series.value, labels: series.labels }];
  }
}

export class BoundHistogram extends BoundFamily<HistogramSeries> {
  readonly type = 'histogram';

  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    registry: Registry,
    private readonly bounds: readonly number[],
  ) {
    super(name, help, labelNames, registry);
  }

  protected create(labels: Labels): HistogramSeries {
    return new HistogramSeries(labels, this.bounds);
  }

  /** prom-client's histogram shape: cumulative `_bucket` series with `le`, then `_sum` and `_count`. */
  protected render(series: HistogramSeries): RenderedValue[] {
    const values: RenderedValue[] = [];
    let cumulative = 0;
    this.bounds.forEach((bound, index) => {
      cumulative += series.counts[index];
      values.push({ value: cumulative, labels: { le: String(bound), ...series.labels }, metricName: `${this.name}_bucket` });
    });
    values.push({ value: series.count, labels: { le: '+Inf', ...series.labels }, metricName: `${this.name}_bucket` });
    values.push({ value: series.sum, labels: series.labels, metricName: `${this.name}_sum` });
    values.push({ value: series.count, labels: series.labels, metricName: `${this.name}_count` });
    return values;
  }
}
