/**
 * The shapes of the worker's metrics as Conveyor's public types name them.
 * They are structural, written here rather than imported from prom-client:
 * prom-client is an optional peer, and the package's declarations must
 * compile where it is not installed. prom-client's `Counter`, `Gauge`,
 * `Histogram` and `Registry` are each one of these shapes.
 */

/** Label values of one series, by label name. */
export type MetricLabels<L extends string> = Partial<Record<L, string | number>>;

/** One series of a metric as read: its labels and value (a histogram has one per bucket, plus its sum and count, named by `metricName`). */
export interface MetricSample {
  /** The series' labels (a histogram bucket's also has `le`). */
  readonly labels: Readonly<Record<string, string | number | undefined>>;
  /** Its value now. */
  readonly value: number;
  /** For a histogram, which of its series this is: `<name>_bucket`, `<name>_sum` or `<name>_count`. */
  readonly metricName?: string;
}

/** A metric read with `get()`: every series it has. */
export interface MetricReading {
  /** Each series, in the order the metric keeps them. */
  readonly values: readonly MetricSample[];
}

/** A counter with labels `L` (none when `L` is `never`). */
export interface MetricCounter<L extends string = never> {
  /** Add `value` (default 1) to the series with these labels. */
  inc(labels: MetricLabels<L>, value?: number): void;
  /** Add `value` (default 1) to the series without labels. */
  inc(value?: number): void;
  /** Read every series. */
  get(): Promise<MetricReading>;
}

/** A histogram with labels `L` (none when `L` is `never`). */
export interface MetricHistogram<L extends string = never> {
  /** Record one observation in the series with these labels. */
  observe(labels: MetricLabels<L>, value: number): void;
  /** Record one observation in the series without labels. */
  observe(value: number): void;
  /** Read every series: each bucket, the sum and the count. */
  get(): Promise<MetricReading>;
}

/** A gauge whose value is computed when it is read. */
export interface MetricGauge {
  /** Read it (computing its value now). */
  get(): Promise<MetricReading>;
}

/**
 * A Prometheus registry: prom-client's `Registry` (Conveyor's worker
 * metrics are prom-client metrics, registered into it).
 */
export interface MetricsRegistry {
  /** Every metric in it, in the Prometheus text format. */
  metrics(): Promise<string>;
  /** The content type of that text, for a `/metrics` response. */
  readonly contentType: string;
  /** Add a metric to it (prom-client calls this for each metric made with the registry in its `registers`). */
  registerMetric(metric: unknown): void;
}
