/**
 * One HTTP attempt, observed as OpenTelemetry's HTTP client conventions say: a CLIENT span per
 * attempt (a child of the call's span) named after the method, with `http.request.method`,
 * `server.address`, `server.port`, `url.full`, `http.response.status_code`, `error.type` and, on a
 * resend, `http.request.resend_count`; and the `http.client.request.duration` histogram. The same
 * for every transport: it is recorded here, around the transport's `send`.
 *
 * Our URLs carry no patient data (a PersonUid travels in the body), so `url.full` is safe to
 * record; keep it so. No header, body or query is recorded.
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Metric from "effect/Metric"
import * as MetricLabel from "effect/MetricLabel"
import type * as Tracer from "effect/Tracer"
import type { TransportError } from "../ClinicalError.js"
import type * as HttpTransport from "../HttpTransport.js"
import * as Telemetry from "./telemetry.js"

/** Where a URL points, as the conventions name it; computed once per URL. */
interface Server {
  readonly address: string
  readonly port: number
}

const servers = new Map<string, Server>()

const serverOf = (url: string): Server => {
  let server = servers.get(url)
  if (server === undefined) {
    const parsed = new URL(url)
    server = {
      address: parsed.hostname,
      port: parsed.port === "" ? (parsed.protocol === "https:" ? 443 : 80) : Number(parsed.port)
    }
    // Bounded: a client calls a handful of fixed URLs; anything else is not worth keeping.
    if (servers.size < 256) servers.set(url, server)
  }
  return server
}

/** `error.type` of an attempt: the status of an HTTP error, or the transport's reason. */
const errorType = (exit: Exit.Exit<HttpTransport.TransportResponse, TransportError>): string | undefined => {
  if (Exit.isSuccess(exit)) return exit.value.status >= 400 ? String(exit.value.status) : undefined
  const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined
  return failure === undefined ? (exit.cause._tag === "Interrupt" ? "interrupted" : "_OTHER") : failure.reason
}

/** The `http.client.request.duration` histogram, tagged once per combination of its attributes. */
const durations = new Map<string, Metric.Metric.Histogram<number>>()

const durationOf = (method: string, server: Server, status: number | undefined, error: string | undefined) => {
  const key = `${method} ${server.address} ${server.port} ${status} ${error}`
  let metric = durations.get(key)
  if (metric === undefined) {
    metric = Metric.taggedWithLabels(
      Telemetry.httpClientRequestDuration,
      [
        ["http.request.method", method],
        ["server.address", server.address],
        ["server.port", String(server.port)],
        ...(status === undefined ? [] : [["http.response.status_code", String(status)] as const]),
        ...(error === undefined ? [] : [["error.type", error] as const])
      ].map(([name, value]) => MetricLabel.make(name, value))
    )
    if (durations.size < 1024) durations.set(key, metric)
  }
  return metric
}

/** The W3C `traceparent` header of a span. */
const traceparent = (span: Tracer.Span): string => `00-${span.traceId}-${span.spanId}-${span.sampled ? "01" : "00"}`

/**
 * `send(request)` observed as one attempt; `resendCount` is how many times this call's request
 * was sent before (0 for the first attempt). With `propagate`, the request carries the attempt's
 * `traceparent`.
 */
export const attempt = (
  request: HttpTransport.TransportRequest,
  resendCount: number,
  propagate: boolean,
  send: (request: HttpTransport.TransportRequest) => Effect.Effect<HttpTransport.TransportResponse, TransportError>
): Effect.Effect<HttpTransport.TransportResponse, TransportError> =>
  Effect.suspend(() => {
    const server = serverOf(request.url)
    const attributes: Record<string, unknown> = {
      "http.request.method": request.method,
      "server.address": server.address,
      "server.port": server.port,
      "url.full": request.url
    }
    if (resendCount > 0) attributes["http.request.resend_count"] = resendCount
    const started = performance.now()
    return Effect.useSpan(request.method, { kind: "client", attributes, captureStackTrace: false }, (span) =>
      Effect.onExit(
        send(propagate ? { ...request, headers: { ...request.headers, traceparent: traceparent(span) } } : request),
        (exit) =>
          Effect.suspend(() => {
            const status = Exit.isSuccess(exit) ? exit.value.status : undefined
            const error = errorType(exit)
            if (status !== undefined) {
              span.attribute("http.response.status_code", status)
            }
            if (error !== undefined) {
              span.attribute("error.type", error)
            }
            return Metric.update(
              durationOf(request.method, server, status, error),
              (performance.now() - started) / 1000
            )
          })
      ))
  })
