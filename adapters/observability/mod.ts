/** Logs and metrics. */
export { createJsonLogger, silentLogger } from "./json_logger.ts";
export { createPrometheusMetrics, meteredRpcFetch, type PrometheusMetrics } from "./prometheus_metrics.ts";
