/**
 * Which telemetry a command exports, decided from its `--metrics-port` / `--metrics-host` and
 * OpenTelemetry's standard environment variables (pure: tests drive it with an environment of
 * their own). Nothing is exported unless asked: an OTLP endpoint set, a Prometheus port given.
 *
 * - OTLP over HTTP: metrics when `OTEL_EXPORTER_OTLP_ENDPOINT` or `..._METRICS_ENDPOINT` is set,
 *   spans when it or `..._TRACES_ENDPOINT` is, unless `OTEL_METRICS_EXPORTER` / `OTEL_TRACES_EXPORTER`
 *   list exporters without `otlp` (`none`, `prometheus`); `OTEL_SDK_DISABLED=true` turns both off. The exporters read the endpoint, headers,
 *   timeout and compression themselves.
 * - Prometheus: `--metrics-port` (or `OTEL_METRICS_EXPORTER=prometheus` with
 *   `OTEL_EXPORTER_PROMETHEUS_PORT`, default 9464), served on loopback unless `--metrics-host`
 *   (`OTEL_EXPORTER_PROMETHEUS_HOST`) says otherwise.
 */

/** What a command exports. */
export interface Plan {
  /** Metrics pushed over OTLP/HTTP every `intervalMillis`, and once more when the command ends. */
  readonly otlpMetrics?: { readonly intervalMillis: number } | undefined
  /** Spans pushed over OTLP/HTTP, in batches. */
  readonly otlpTraces: boolean
  /** A Prometheus scrape endpoint (`/metrics`) on this host and port (0: any free one). */
  readonly prometheus?: { readonly host: string; readonly port: number } | undefined
}

/** What the command line was given. */
export interface Asked {
  readonly metricsPort: number | undefined
  readonly metricsHost: string | undefined
}

/** OpenTelemetry's default interval between metric exports. */
const DEFAULT_INTERVAL_MILLIS = 60_000

/** Prometheus's registered port for OpenTelemetry's exporter. */
const DEFAULT_PROMETHEUS_PORT = 9464

/** Whether a plan exports anything at all (none: the telemetry packages are not even loaded). */
export const exportsAnything = (plan: Plan): boolean =>
  plan.otlpMetrics !== undefined || plan.otlpTraces || plan.prometheus !== undefined

const set = (value: string | undefined): boolean => value !== undefined && value.trim() !== ""

/** The exporters an `OTEL_*_EXPORTER` variable lists (comma-separated, any case). */
const listed = (value: string | undefined): ReadonlyArray<string> =>
  (value ?? "").split(",").map((name) => name.trim().toLowerCase()).filter((name) => name !== "")

const port = (value: string, name: string): number | string => {
  const n = Number(value)
  return /^\d{1,5}$/.test(value.trim()) && n <= 65_535 ? n : `${name} must be a port number from 0 to 65535`
}

/** A host name or address to listen on: letters, digits, dots, colons, hyphens, underscores, brackets. */
const HOST = /^[A-Za-z0-9._:[\]-]{1,253}$/

/**
 * The plan for `asked` in `env`, or the reason it is refused (a usage error's text, naming the
 * variable or option; never a value of a header or an endpoint, which may hold a credential).
 */
export const planOf = (asked: Asked, env: Readonly<Record<string, string | undefined>>): Plan | string => {
  const disabled = env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true"
  const metricsExporters = listed(env.OTEL_METRICS_EXPORTER)
  const tracesExporters = listed(env.OTEL_TRACES_EXPORTER)
  for (
    const name of [
      "OTEL_EXPORTER_OTLP_PROTOCOL",
      "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
      "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
    ]
  ) {
    const protocol = env[name]?.trim()
    if (set(protocol) && protocol !== "http/json" && protocol !== "http/protobuf") {
      return `${name}: the command line sends OTLP over HTTP (http/json, to the collector's port 4318); grpc is not supported`
    }
  }
  const interval = env.OTEL_METRIC_EXPORT_INTERVAL?.trim()
  const intervalMillis = set(interval)
    ? (/^\d{1,8}$/.test(interval!) ? Number(interval) : Number.NaN)
    : DEFAULT_INTERVAL_MILLIS
  if (!(intervalMillis >= 100 && intervalMillis <= 86_400_000)) {
    return "OTEL_METRIC_EXPORT_INTERVAL must be whole milliseconds from 100 to 86400000"
  }
  // As OpenTelemetry's variables say: each `OTEL_*_EXPORTER` lists the exporters to use (OTLP when unset).
  const wantsOtlp = (exporters: ReadonlyArray<string>) => exporters.length === 0 || exporters.includes("otlp")
  const otlp = !disabled && set(env.OTEL_EXPORTER_OTLP_ENDPOINT)
  const otlpMetrics = !disabled && wantsOtlp(metricsExporters) &&
    (otlp || set(env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT))
  const otlpTraces = !disabled && wantsOtlp(tracesExporters) &&
    (otlp || set(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT))
  const prometheusPort = asked.metricsPort ??
    (!disabled && metricsExporters.includes("prometheus")
      ? port(
        env.OTEL_EXPORTER_PROMETHEUS_PORT?.trim() || String(DEFAULT_PROMETHEUS_PORT),
        "OTEL_EXPORTER_PROMETHEUS_PORT"
      )
      : undefined)
  if (typeof prometheusPort === "string") return prometheusPort
  if (
    prometheusPort !== undefined &&
    !(Number.isInteger(prometheusPort) && prometheusPort >= 0 && prometheusPort <= 65_535)
  ) {
    return "--metrics-port must be a port number from 0 to 65535"
  }
  if (asked.metricsHost !== undefined && prometheusPort === undefined) {
    return "--metrics-host needs --metrics-port"
  }
  const fromVariable = asked.metricsHost === undefined && set(env.OTEL_EXPORTER_PROMETHEUS_HOST)
  const host = asked.metricsHost ?? (fromVariable ? env.OTEL_EXPORTER_PROMETHEUS_HOST!.trim() : "127.0.0.1")
  // Checked only where it is used: a variable for a Prometheus not asked for stops no command.
  if (prometheusPort !== undefined && !HOST.test(host)) {
    return `${fromVariable ? "OTEL_EXPORTER_PROMETHEUS_HOST" : "--metrics-host"} must be a host name or an address`
  }
  return {
    otlpMetrics: otlpMetrics ? { intervalMillis } : undefined,
    otlpTraces,
    prometheus: prometheusPort === undefined ? undefined : { host, port: prometheusPort }
  }
}
