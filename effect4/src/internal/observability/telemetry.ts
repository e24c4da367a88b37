/**
 * The client's metrics (core/observability/metrics.ts: names, descriptions, buckets) as Effect 4
 * `Metric`s. Labels are drawn from small fixed sets: never a token, an ApplicationId or a PersonUid.
 */
import * as Metric from "effect/Metric"
import * as Metrics from "../../../../core/observability/metrics.js"

/** A counter of this line from its core definition (name, description). */
export const counter = ({ description, name }: Metrics.Definition) =>
  Metric.counter(name, { description, incremental: true })

/** A gauge of this line from its core definition (name, description). */
export const gauge = ({ description, name }: Metrics.Definition) => Metric.gauge(name, { description })

/** Token requests sent to the token endpoint. */
export const tokenRequests = counter(Metrics.tokenRequests)

/** Token refreshes started, by `reason` (empty, soft-window, hard-window, expired). */
export const tokenRefreshes = counter(Metrics.tokenRefreshes)

/** The last observed server clock minus the local clock, in milliseconds. */
export const serverClockSkew = gauge(Metrics.serverClockSkew)

/** The lifetime of the last token obtained, in seconds, after the `maxTokenLifetime` cap. */
export const tokenLifetime = gauge(Metrics.tokenLifetime)

/** Requests refused fast because the token endpoint asked for a pause (`Retry-After`). */
export const throttledFastFails = counter(Metrics.throttledFastFails)

const histogram = ({ boundaries, description, name }: Metrics.Definition) =>
  Metric.histogram(name, { description, boundaries: boundaries ?? [] })

/** Retries, by `operation` and `cause` (network, timeout, or the status code). */
export const retries = counter(Metrics.retries)

/** Calls that failed, by `operation` and `error` (the error's tag). */
export const failures = counter(Metrics.failures)

/** Requests a client lets out at once: the adaptive concurrency limit's last value. */
export const concurrencyLimit = gauge(Metrics.concurrencyLimit)

/** Attempts not sent by the load control, by `reason` (circuit-open, retry-budget). */
export const refusedByLoadControl = counter(Metrics.refusedByLoadControl)

/** Attempts per call, by `operation`. */
export const attemptsPerCall = histogram(Metrics.attemptsPerCall)

/** OpenTelemetry's `http.client.request.duration`, in seconds. */
export const httpClientRequestDuration = histogram(Metrics.httpClientRequestDuration)

/** Log lines an application's logger threw on (the Promise client's `logger`): dropped, counted here. */
export const logLinesDropped = counter(Metrics.logLinesDropped)

/**
 * A span's trace options: no stack captured. Effect 4 captures one per span by default, which
 * would name only the library's own line, at a cost on every call.
 */
export const NO_STACK = { captureStackTrace: false } as const
