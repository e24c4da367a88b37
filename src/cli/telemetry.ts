/**
 * The command line's telemetry, as its plan (telemetryPlan.ts) says: the process's Effect metrics
 * (the client's, the queue's, the batch's) to an OTLP collector and a Prometheus scrape endpoint,
 * its spans to an OTLP collector. Loaded (with OpenTelemetry's SDK, bundled in this chunk) only when
 * a command exports something: no command pays for it otherwise.
 *
 * A gauge that must be current when read (the queue's depth) is refreshed by `refresh` before each
 * collection: a scrape, an export, the last export at the end.
 */
import * as Metrics from "@effect/opentelemetry/Metrics"
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import * as Resource from "@effect/opentelemetry/Resource"
import * as Tracer from "@effect/opentelemetry/Tracer"
import { OTLPMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http"
import { PrometheusExporter } from "@opentelemetry/exporter-prometheus"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"
import { type MetricProducer, type MetricReader, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics"
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { listening, originOf } from "./listening.js"
import type { CliError } from "./outcome.js"
import type { Plan } from "./telemetryPlan.js"

/** Longest a collection waits for `refresh`: a Redis that is away must not hold a scrape. */
const REFRESH_MILLIS = 2_000

/** OpenTelemetry's default (and longest) time an export may take. */
const EXPORT_TIMEOUT_MILLIS = 30_000

/** A refresh younger than this serves the next collection too: scrapes in a loop cost Redis one read a second. */
const REFRESH_REUSED_MILLIS = 1_000

/**
 * `producer`, with `refresh` run before each collection: within its bound (its failure ignored:
 * the gauges keep their last values), one at a time (collections meanwhile wait for that one), and
 * not again within a second of the last.
 */
const refreshing = (producer: MetricProducer, refresh: (() => Promise<void>) | undefined): MetricProducer => {
  if (refresh === undefined) return producer
  let running: Promise<void> | undefined
  let doneAt = Number.NEGATIVE_INFINITY
  const refreshed = (): Promise<void> => {
    if (Date.now() - doneAt < REFRESH_REUSED_MILLIS) return Promise.resolve()
    return running ??= refresh().catch(() => undefined).finally(() => {
      doneAt = Date.now()
      running = undefined
    })
  }
  return {
    collect: async (options) => {
      let timer: ReturnType<typeof setTimeout> | undefined
      await Promise.race([refreshed(), new Promise((resolve) => (timer = setTimeout(resolve, REFRESH_MILLIS)))])
      clearTimeout(timer)
      return producer.collect(options)
    }
  }
}

/** The scrape endpoint: `GET /metrics` answered by the exporter, anything else 404; closed with the scope. */
const serve = (exporter: PrometheusExporter, host: string, port: number) =>
  listening(
    (request, response) => {
      if (request.method === "GET" && (request.url === "/metrics" || request.url?.startsWith("/metrics?"))) {
        exporter.getMetricsRequestHandler(request, response)
        return
      }
      response.writeHead(404, { "content-type": "text/plain" }).end("not found: the metrics are at /metrics\n")
    },
    host,
    port,
    "metrics"
  ).pipe(
    Effect.tap((server) => Console.error(`metrics: ${originOf(server)}/metrics (Prometheus)`))
  )

/** The metric readers of the plan, each started; the scrape endpoint listening. */
const readersOf = (plan: Plan) =>
  Effect.gen(function*() {
    const readers: Array<MetricReader> = []
    if (plan.otlpMetrics !== undefined) {
      readers.push(
        new PeriodicExportingMetricReader({
          exporter: new OTLPMetricExporter(),
          exportIntervalMillis: plan.otlpMetrics.intervalMillis,
          exportTimeoutMillis: Math.min(EXPORT_TIMEOUT_MILLIS, plan.otlpMetrics.intervalMillis)
        })
      )
    }
    if (plan.prometheus !== undefined) {
      const exporter = new PrometheusExporter({ preventServerStart: true })
      yield* serve(exporter, plan.prometheus.host, plan.prometheus.port)
      readers.push(exporter)
    }
    return readers
  })

/**
 * The plan's telemetry as a layer: provided around a command, its metrics exported while it runs
 * and once more as it ends (the readers shut down with the layer), its spans to the collector.
 */
export const layer = (
  plan: Plan,
  version: string,
  env: Readonly<Record<string, string | undefined>>,
  refresh?: () => Promise<void>
): Layer.Layer<never, CliError> => {
  // Ours unless the environment names the service (OpenTelemetry's variables win).
  const named = (env.OTEL_SERVICE_NAME ?? "").trim() !== "" ||
    /(^|,)\s*service\.name\s*=/.test(env.OTEL_RESOURCE_ATTRIBUTES ?? "")
  const resource = Resource.layerFromEnv({
    ...(named ? {} : { "service.name": "effect-clinical" }),
    "service.version": version
  })
  const metrics = Layer.scopedDiscard(Effect.gen(function*() {
    const readers = yield* readersOf(plan)
    if (readers.length === 0) return
    const producer = refreshing(yield* Metrics.makeProducer, refresh)
    yield* Metrics.registerProducer(producer, () => readers as [MetricReader, ...Array<MetricReader>])
  }))
  const traces = plan.otlpTraces
    ? Tracer.layer.pipe(Layer.provide(NodeSdk.layerTracerProvider(new BatchSpanProcessor(new OTLPTraceExporter()))))
    : Layer.empty
  return Layer.mergeAll(metrics, traces).pipe(Layer.provide(resource))
}
