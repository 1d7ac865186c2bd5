import type { MetricLabels, Metrics } from "../../ports/metrics.ts";

/** Histogram buckets for request and RPC durations, in seconds. */
const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

type Histogram = { buckets: number[]; sum: number; count: number };

// Label values almost never need escaping; the test keeps the three replaces off every request's path.
const NEEDS_ESCAPE = /[\\"\n]/;
const escape = (value: string) =>
  NEEDS_ESCAPE.test(value) ? value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n") : value;
const labelTextOf = (labels: MetricLabels) => {
  const keys = Object.keys(labels).sort();
  return keys.length === 0 ? "" : `{${keys.map((k) => `${k}="${escape(labels[k]!)}"`).join(",")}}`;
};
// The text of a labels object a caller passes again and again (the HTTP edge makes one per route, method and
// status), kept by identity; the caller must not change such an object afterwards (issue 28).
const labelTexts = new WeakMap<MetricLabels, string>();
const labelText = (labels: MetricLabels) => {
  let text = labelTexts.get(labels);
  if (text === undefined) {
    text = labelTextOf(labels);
    labelTexts.set(labels, text);
  }
  return text;
};

/** A gauge read when `/metrics` is scraped (e.g. a wallet balance from the chain). */
export type GaugeReader = () => Promise<ReadonlyArray<{ labels?: MetricLabels; value: number | bigint }>>;

/**
 * An in-process Prometheus registry: counters and histograms in memory, gauges read at scrape time,
 * rendered in the text exposition format (version 0.0.4).
 */
export function createPrometheusMetrics() {
  const help = new Map<string, { type: "counter" | "histogram" | "gauge"; text: string }>();
  const counters = new Map<string, Map<string, number>>();
  const histograms = new Map<string, Map<string, Histogram>>();
  const gauges = new Map<string, GaugeReader>();

  const metrics: Metrics = {
    increment(name, labels = {}, by = 1) {
      const series = counters.get(name) ?? counters.set(name, new Map()).get(name)!;
      const key = labelText(labels);
      series.set(key, (series.get(key) ?? 0) + by);
    },
    observe(name, value, labels = {}) {
      const series = histograms.get(name) ?? histograms.set(name, new Map()).get(name)!;
      const key = labelText(labels);
      let h = series.get(key);
      if (h === undefined) {
        h = { buckets: BUCKETS.map(() => 0), sum: 0, count: 0 };
        series.set(key, h);
      }
      for (let i = 0; i < BUCKETS.length; i++) if (value <= BUCKETS[i]!) h.buckets[i]!++;
      h.sum += value;
      h.count++;
    },
  };

  return {
    ...metrics,
    /** Declares a metric's type and help text (shown even before the first sample). */
    describe(name: string, type: "counter" | "histogram" | "gauge", text: string) {
      help.set(name, { type, text });
    },
    /** Registers a gauge whose samples are read at scrape time. */
    gauge(name: string, text: string, read: GaugeReader) {
      help.set(name, { type: "gauge", text });
      gauges.set(name, read);
    },
    /** The exposition text; a gauge whose read fails is left out (and counted). */
    async render(): Promise<string> {
      const lines: string[] = [];
      const header = (name: string) => {
        const h = help.get(name);
        if (h) lines.push(`# HELP ${name} ${h.text}`, `# TYPE ${name} ${h.type}`);
      };
      const names = new Set([...help.keys(), ...counters.keys(), ...histograms.keys()]);
      for (const name of [...names].sort()) {
        if (gauges.has(name)) {
          let samples: Awaited<ReturnType<GaugeReader>> | undefined;
          try {
            samples = await gauges.get(name)!();
          } catch {
            metrics.increment("ats_metrics_gauge_failures_total", { gauge: name });
            continue;
          }
          header(name);
          for (const s of samples) lines.push(`${name}${labelText(s.labels ?? {})} ${s.value.toString()}`);
          continue;
        }
        const counter = counters.get(name);
        const histogram = histograms.get(name);
        header(name);
        if (counter) for (const [labels, value] of counter) lines.push(`${name}${labels} ${value}`);
        if (histogram) {
          for (const [labels, h] of histogram) {
            const inner = labels === "" ? "" : labels.slice(1, -1);
            const withLe = (le: string) => `{${inner === "" ? "" : `${inner},`}le="${le}"}`;
            BUCKETS.forEach((b, i) => lines.push(`${name}_bucket${withLe(String(b))} ${h.buckets[i]}`));
            lines.push(`${name}_bucket${withLe("+Inf")} ${h.count}`, `${name}_sum${labels} ${h.sum}`, `${name}_count${labels} ${h.count}`);
          }
        }
      }
      return `${lines.join("\n")}\n`;
    },
  };
}

/** The registry with its rendering. */
export type PrometheusMetrics = ReturnType<typeof createPrometheusMetrics>;

/** A JSON-RPC error code as a label value: an integer in the spec's range, else `other`. */
const codeLabel = (code: unknown) =>
  typeof code === "number" && Number.isInteger(code) && Math.abs(code) <= 32_768 ? String(code) : "other";

/**
 * Counts the JSON-RPC error objects of a 200 answer's text (single or batch) as failures with reason `rpc_error`, the
 * error code and the method of the call (matched by id). Messages and data are never kept.
 */
function countRpcErrors(text: string, methods: ReadonlyMap<unknown, string>, metrics: Metrics) {
  // Results are hex and plain fields; without this key there is nothing to parse twice.
  if (!text.includes('"error"')) return;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return;
  }
  for (const answer of Array.isArray(body) ? body : [body]) {
    if (typeof answer !== "object" || answer === null || !("error" in answer) || answer.error == null) continue;
    const error = answer.error as { code?: unknown };
    const method = methods.get((answer as { id?: unknown }).id) ?? (methods.size === 1 ? [...methods.values()][0]! : "unknown");
    metrics.increment("ats_rpc_failures_total", { reason: "rpc_error", code: codeLabel(error?.code), method });
  }
}

/**
 * Wraps `fetch` for JSON-RPC: counts calls by method, HTTP round trips, failures (network error,
 * timeout, non-2xx, and JSON-RPC error objects inside a 2xx answer) and round-trip time. Never
 * records URLs, bodies or error messages.
 */
export function meteredRpcFetch(inner: typeof fetch, metrics: Metrics): typeof fetch {
  return (async (input: RequestInfo | URL, init?: RequestInit) => {
    // Request id -> method, to label the errors of a batch answer.
    const methods = new Map<unknown, string>();
    try {
      const body = JSON.parse(String(init?.body ?? "null"));
      for (const call of Array.isArray(body) ? body : [body]) {
        if (typeof call?.method !== "string") continue;
        metrics.increment("ats_rpc_calls_total", { method: call.method });
        methods.set(call.id, call.method);
      }
    } catch {
      // not JSON-RPC
    }
    const started = performance.now();
    let response: Response;
    try {
      response = await inner(input, init);
    } catch (error) {
      metrics.increment("ats_rpc_failures_total", { reason: error instanceof Error && error.name === "TimeoutError" ? "timeout" : "network" });
      throw error;
    } finally {
      metrics.observe("ats_rpc_round_trip_seconds", (performance.now() - started) / 1000);
    }
    if (!response.ok || methods.size === 0) {
      if (!response.ok) metrics.increment("ats_rpc_failures_total", { reason: `http_${response.status}` });
      return response;
    }
    // The body is read once, here, and handed on as a new response of the same text (issue 43): a clone read beside
    // the caller's copy (a tee of the stream and a second decode) was 6 % of the service's CPU per attestation.
    const text = await response.text();
    countRpcErrors(text, methods, metrics);
    // Its headers less those of the bytes on the wire (the text is decoded; its length is the new body's own).
    const headers = new Headers(response.headers);
    headers.delete("content-encoding");
    headers.delete("content-length");
    return new Response(text, { status: response.status, statusText: response.statusText, headers });
  }) as typeof fetch;
}
