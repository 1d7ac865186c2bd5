/** Labels of one series; values are short, bounded strings (never ids, addresses or URLs). */
export type MetricLabels = Readonly<Record<string, string>>;

/** Counters and histograms the HTTP layer and adapters report to. */
export interface Metrics {
  readonly increment: (name: string, labels?: MetricLabels, by?: number) => void;
  /** Records one observation (seconds for durations) into a histogram. */
  readonly observe: (name: string, value: number, labels?: MetricLabels) => void;
}
