import { Counter, Histogram, Registry } from 'prom-client';
import { BoundCounter, BoundHistogram } from './bound-families';

/** The same figures through prom-client's own metrics and through the bound families render the same text. */
describe('bound families', () => {
  const values = [0.0001, 0.05, 0.05, 0.3, 2, 99];
  const buckets = [0.01, 0.1, 1, 10];

  it('render a histogram exactly as prom-client renders its own', async () => {
    const theirs = new Registry();
    const ours = new Registry();
    const histogram = new Histogram({ name: 'h_seconds', help: 'h', labelNames: ['tool'], buckets, registers: [theirs] });
    const bound = new BoundHistogram('h_seconds', 'h', ['tool'], ours, buckets).bind('calculator');
    for (const value of values) {
      histogram.labels('calculator').observe(value);
      bound.observe(value);
    }
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });

  it('render a counter exactly as prom-client renders its own, and reset to zero without losing bound series', async () => {
    const theirs = new Registry();
    const ours = new Registry();
    const counter = new Counter({ name: 'c_total', help: 'c', labelNames: ['protocol', 'outcome'], registers: [theirs] });
    const family = new BoundCounter('c_total', 'c', ['protocol', 'outcome'], ours);
    const ok = family.bind('mcp', 'ok');
    counter.labels('mcp', 'ok').inc(3);
    counter.labels('llm', 'error').inc();
    ok.inc();
    ok.inc(2);
    family.bind('llm', 'error').inc();
    expect(await ours.metrics()).toBe(await theirs.metrics());
    expect(family.bind('mcp', 'ok')).toBe(ok);

    ours.resetMetrics();
    ok.inc();
    expect(await ours.metrics()).toContain('c_total{protocol="mcp",outcome="ok"} 1\n');
  });

  it('refuse label values of the wrong arity', () => {
    expect(() => new BoundCounter('x_total', 'x', ['a', 'b'], new Registry()).bind('only-one')).toThrow(/takes 2 label values/);
  });
});
