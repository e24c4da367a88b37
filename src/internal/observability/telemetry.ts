/**
 * The client's metrics (core/observability/metrics.ts: names, descriptions, buckets) as this
 * line's `Metric`s. Labels are drawn from small fixed sets (operation names, error tags, status
 * codes, refresh reasons): never a token, an ApplicationId or a PersonUid.
 */
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"
import * as MetricKey from "effect/MetricKey"
import * as Metrics from "../../../core/observability/metrics.js"

/** A counter of this line from its core definition (name, description). */
export const counter = ({ description, name }: Metrics.Definition) =>
  Metric.counter(name, { description, incremental: true })

/** A gauge of this line from its core definition (name, description). */
export const gauge = ({ description, name }: Metrics.Definition) => Metric.gauge(name, { description })
const histogramKey = ({ boundaries, description, name }: Metrics.Definition) =>
  MetricKey.histogram(name, MetricBoundaries.fromIterable(boundaries ?? []), description)

/** Token requests sent to the token endpoint. */
export const tokenRequests = counter(Metrics.tokenRequests)

/** Token refreshes started, by `reason` (empty, soft-window, hard-window, expired). */
export const tokenRefreshes = counter(Metrics.tokenRefreshes)

/** The last observed server clock minus the local clock, in milliseconds. */
export const serverClockSkew = gauge(Metrics.serverClockSkew)

/** The lifetime of the last token obtained, in seconds, after the `maxTokenLifetime` cap. */
export const tokenLifetime = gauge(Metrics.tokenLifetime)

/** Retries, by `operation` and `cause` (network, timeout, or the status code). */
export const retries = counter(Metrics.retries)

/** Calls that failed, by `operation` and `error` (the error's tag). */
export const failures = counter(Metrics.failures)

/** Requests refused fast because the token endpoint asked for a pause (`Retry-After`). */
export const throttledFastFails = counter(Metrics.throttledFastFails)

/** Requests a client lets out at once: the adaptive concurrency limit's last value (see docs/resilience.md). */
export const concurrencyLimit = gauge(Metrics.concurrencyLimit)

/** Attempts not sent by the load control, by `reason` (circuit-open, retry-budget). */
export const refusedByLoadControl = counter(Metrics.refusedByLoadControl)

/** The key of {@link attemptsPerCall}, for the hot path's updater (see `metricUpdater`). */
export const attemptsPerCallKey = histogramKey(Metrics.attemptsPerCall)

/** Attempts per call (1 when the first attempt settled it), by `operation`. */
export const attemptsPerCall = Metric.fromMetricKey(attemptsPerCallKey)

/** Failed operations of the shared token store, by `reason` (Timeout, Unavailable, Unreadable). */
export const tokenStoreFailures = counter(Metrics.tokenStoreFailures)

/** Values in the shared token store no instance could read, replaced (see `tokenSharing`). */
export const tokenStoreRepairs = counter(Metrics.tokenStoreRepairs)

/** Tokens taken from the shared token store instead of requested from the token endpoint. */
export const tokensFromStore = counter(Metrics.tokensFromStore)

/**
 * Duration of each HTTP attempt, in seconds, as OpenTelemetry's HTTP client conventions name it,
 * by `http.request.method`, `server.address`, `server.port`, `http.response.status_code` and
 * `error.type`; with the buckets those conventions advise.
 */
export const httpClientRequestDurationKey = histogramKey(Metrics.httpClientRequestDuration)

/** The {@link httpClientRequestDurationKey} histogram, as a `Metric` to read or tag. */
export const httpClientRequestDuration = Metric.fromMetricKey(httpClientRequestDurationKey)

/** Log lines an application's logger threw on (the Promise client's `logger`): dropped, counted here. */
export const logLinesDroppedKey = MetricKey.counter(Metrics.logLinesDropped.name, {
  description: Metrics.logLinesDropped.description,
  incremental: true
})

/** The {@link logLinesDroppedKey} counter, as a `Metric` to read. */
export const logLinesDropped = Metric.fromMetricKey(logLinesDroppedKey)
