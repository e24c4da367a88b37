/**
 * Which telemetry a command exports (src/cli/telemetryPlan.ts), from its options and OpenTelemetry's
 * standard variables: nothing unless asked; OTLP by endpoint, per signal; Prometheus by port or by
 * `OTEL_METRICS_EXPORTER`; refusals that name the variable, never its value.
 */
import { describe, expect, it } from "vitest"
import { exportsAnything, planOf } from "../src/cli/telemetryPlan.js"

const none = { metricsPort: undefined, metricsHost: undefined }

describe("planOf", () => {
  it("exports nothing unless asked", () => {
    const plan = planOf(none, {})
    expect(plan).toEqual({ otlpMetrics: undefined, otlpTraces: false, prometheus: undefined })
    expect(exportsAnything(plan as Exclude<typeof plan, string>)).toBe(false)
  })

  it("OTLP: both signals by the common endpoint, each by its own, one turned off by its exporter variable", () => {
    expect(planOf(none, { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toEqual({
      otlpMetrics: { intervalMillis: 60_000 },
      otlpTraces: true,
      prometheus: undefined
    })
    expect(planOf(none, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://collector:4318/v1/traces" }))
      .toMatchObject({ otlpMetrics: undefined, otlpTraces: true })
    expect(
      planOf(none, { OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: "http://c/v1/metrics", OTEL_METRIC_EXPORT_INTERVAL: "5000" })
    )
      .toMatchObject({ otlpMetrics: { intervalMillis: 5000 }, otlpTraces: false })
    expect(planOf(none, { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_TRACES_EXPORTER: "none" }))
      .toMatchObject({ otlpMetrics: { intervalMillis: 60_000 }, otlpTraces: false })
    expect(planOf(none, { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_METRICS_EXPORTER: " None " }))
      .toMatchObject({ otlpMetrics: undefined, otlpTraces: true })
    expect(planOf(none, { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_SDK_DISABLED: "TRUE" }))
      .toEqual({ otlpMetrics: undefined, otlpTraces: false, prometheus: undefined })
    expect(planOf(none, { OTEL_EXPORTER_OTLP_ENDPOINT: "  " })).toMatchObject({ otlpTraces: false })
  })

  it("Prometheus: --metrics-port on loopback, or OTEL_METRICS_EXPORTER=prometheus on its port (9464 by default)", () => {
    expect(planOf({ metricsPort: 0, metricsHost: undefined }, {})).toMatchObject({
      prometheus: { host: "127.0.0.1", port: 0 }
    })
    expect(planOf({ metricsPort: 9100, metricsHost: "0.0.0.0" }, {})).toMatchObject({
      prometheus: { host: "0.0.0.0", port: 9100 }
    })
    expect(planOf(none, { OTEL_METRICS_EXPORTER: "otlp,prometheus" })).toMatchObject({
      prometheus: { host: "127.0.0.1", port: 9464 }
    })
    // The variable lists the exporters: prometheus alone turns OTLP metrics off, spans stay OTLP.
    expect(planOf(none, { OTEL_METRICS_EXPORTER: "prometheus", OTEL_EXPORTER_OTLP_ENDPOINT: "http://c" }))
      .toMatchObject({ otlpMetrics: undefined, otlpTraces: true, prometheus: { port: 9464 } })
    expect(planOf(none, { OTEL_METRICS_EXPORTER: "otlp,prometheus", OTEL_EXPORTER_OTLP_ENDPOINT: "http://c" }))
      .toMatchObject({ otlpMetrics: { intervalMillis: 60_000 }, prometheus: { port: 9464 } })
    // A Prometheus host of the environment stops nothing when no Prometheus is asked for; underscores are names.
    expect(planOf(none, { OTEL_EXPORTER_PROMETHEUS_HOST: "prom host" })).toMatchObject({ prometheus: undefined })
    expect(planOf({ metricsPort: 1, metricsHost: undefined }, { OTEL_EXPORTER_PROMETHEUS_HOST: "prom_host" }))
      .toMatchObject({ prometheus: { host: "prom_host", port: 1 } })
    expect(planOf(none, {
      OTEL_METRICS_EXPORTER: "prometheus",
      OTEL_EXPORTER_PROMETHEUS_PORT: "9200",
      OTEL_EXPORTER_PROMETHEUS_HOST: "::"
    })).toMatchObject({ prometheus: { host: "::", port: 9200 } })
    // The option wins over the variables.
    expect(planOf({ metricsPort: 9300, metricsHost: undefined }, { OTEL_EXPORTER_PROMETHEUS_PORT: "9200" }))
      .toMatchObject({ prometheus: { port: 9300 } })
  })

  it.each([
    [{ metricsPort: 70_000, metricsHost: undefined }, {}, "--metrics-port must be a port number from 0 to 65535"],
    [{ metricsPort: -1, metricsHost: undefined }, {}, "--metrics-port must be a port number from 0 to 65535"],
    [{ metricsPort: undefined, metricsHost: "0.0.0.0" }, {}, "--metrics-host needs --metrics-port"],
    [{ metricsPort: 1, metricsHost: "evil host; rm" }, {}, "--metrics-host must be a host name or an address"],
    [
      { metricsPort: 1, metricsHost: undefined },
      { OTEL_EXPORTER_PROMETHEUS_HOST: "bad host" },
      "OTEL_EXPORTER_PROMETHEUS_HOST must be a host name or an address"
    ],
    [
      none,
      { OTEL_METRICS_EXPORTER: "prometheus", OTEL_EXPORTER_PROMETHEUS_PORT: "x9464" },
      "OTEL_EXPORTER_PROMETHEUS_PORT must be a port number from 0 to 65535"
    ],
    [
      none,
      { OTEL_METRIC_EXPORT_INTERVAL: "1e3" },
      "OTEL_METRIC_EXPORT_INTERVAL must be whole milliseconds from 100 to 86400000"
    ],
    [
      none,
      { OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" },
      "OTEL_EXPORTER_OTLP_PROTOCOL: the command line sends OTLP over HTTP (http/json, to the collector's port 4318); grpc is not supported"
    ],
    [
      none,
      { OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "grpc" },
      "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: the command line sends OTLP over HTTP (http/json, to the collector's port 4318); grpc is not supported"
    ]
  ])("refuses %j with %j: %s", (asked, env, reason) => {
    expect(planOf(asked, env)).toBe(reason)
  })

  it("takes http/json and http/protobuf alike (both are sent as OTLP/HTTP JSON, which collectors take on 4318)", () => {
    expect(planOf(none, { OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf", OTEL_EXPORTER_OTLP_ENDPOINT: "http://c" }))
      .toMatchObject({ otlpTraces: true })
    expect(planOf(none, { OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_EXPORTER_OTLP_ENDPOINT: "http://c" }))
      .toMatchObject({ otlpTraces: true })
  })
})
