/**
 * The client's metrics. Labels are drawn from small fixed sets (operation names, error tags,
 * status codes, refresh reasons): never a token, an ApplicationId or a PersonUid.
 */
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"
import * as MetricKey from "effect/MetricKey"

/** Token requests sent to the token endpoint. */
export const tokenRequests = Metric.counter("clinical_token_requests_total", {
  description: "Token requests sent to the token endpoint",
  incremental: true
})

/** Token refreshes started, by `reason` (empty, soft-window, hard-window, expired). */
export const tokenRefreshes = Metric.counter("clinical_token_refreshes_total", {
  description: "Token refreshes started, by reason",
  incremental: true
})

/** The last observed server clock minus the local clock, in milliseconds. */
export const serverClockSkew = Metric.gauge("clinical_server_clock_skew_millis", {
  description: "Server Date header minus local time when the token response arrived"
})

/** The lifetime of the last token obtained, in seconds, after the `maxTokenLifetime` cap. */
export const tokenLifetime = Metric.gauge("clinical_token_lifetime_seconds", {
  description: "Lifetime of the last token obtained (TOKEN_EXPIRES minus Date), after the maxTokenLifetime cap"
})

/** Retries, by `operation` and `cause` (network, timeout, or the status code). */
export const retries = Metric.counter("clinical_retries_total", {
  description: "Retried attempts, by operation and cause",
  incremental: true
})

/** Calls that failed, by `operation` and `error` (the error's tag). */
export const failures = Metric.counter("clinical_failures_total", {
  description: "Failed calls, by operation and error tag",
  incremental: true
})

/** Requests refused fast because the token endpoint asked for a pause (`Retry-After`). */
export const throttledFastFails = Metric.counter("clinical_token_throttled_total", {
  description: "Token requests refused without sending, while the token endpoint's Retry-After runs",
  incremental: true
})

/** Requests a client lets out at once: the adaptive concurrency limit's last value (see docs/resilience.md). */
export const concurrencyLimit = Metric.gauge("clinical_concurrency_limit", {
  description: "Requests the client lets out at once (the adaptive concurrency limit)"
})

/** Attempts not sent by the load control, by `reason` (circuit-open, retry-budget). */
export const refusedByLoadControl = Metric.counter("clinical_load_refusals_total", {
  description: "Attempts the client did not send: the circuit was open, or the retry budget was spent",
  incremental: true
})

/** The key of {@link attemptsPerCall}, for the hot path's updater (see `metricUpdater`). */
export const attemptsPerCallKey = MetricKey.histogram(
  "clinical_call_attempts",
  MetricBoundaries.linear({ start: 1, width: 1, count: 8 }),
  "Attempts per call, by operation"
)

/** Attempts per call (1 when the first attempt settled it), by `operation`. */
export const attemptsPerCall = Metric.fromMetricKey(attemptsPerCallKey)

/** Failed operations of the shared token store, by `reason` (Timeout, Unavailable, Unreadable). */
export const tokenStoreFailures = Metric.counter("clinical_token_store_failures_total", {
  description: "Token store operations that failed or timed out, by reason",
  incremental: true
})

/** Values in the shared token store no instance could read, replaced (see `tokenSharing`). */
export const tokenStoreRepairs = Metric.counter("clinical_token_store_repairs_total", {
  description: "Values in the shared token store no instance could read, replaced by this instance's publication",
  incremental: true
})

/** Tokens taken from the shared token store instead of requested from the token endpoint. */
export const tokensFromStore = Metric.counter("clinical_token_store_adopted_total", {
  description: "Tokens taken from the shared token store (published by another instance)",
  incremental: true
})

/**
 * Duration of each HTTP attempt, in seconds, as OpenTelemetry's HTTP client conventions name it,
 * by `http.request.method`, `server.address`, `server.port`, `http.response.status_code` and
 * `error.type`; with the buckets those conventions advise.
 */
export const httpClientRequestDurationKey = MetricKey.histogram(
  "http.client.request.duration",
  MetricBoundaries.fromIterable([0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10]),
  "Duration of HTTP client requests, in seconds"
)

/** The {@link httpClientRequestDurationKey} histogram, as a `Metric` to read or tag. */
export const httpClientRequestDuration = Metric.fromMetricKey(httpClientRequestDurationKey)

/** Log lines an application's logger threw on (the Promise client's `logger`): dropped, counted here. */
export const logLinesDroppedKey = MetricKey.counter("clinical_log_lines_dropped_total", {
  description: "Log lines dropped because the application's logger threw",
  incremental: true
})

/** The {@link logLinesDroppedKey} counter, as a `Metric` to read. */
export const logLinesDropped = Metric.fromMetricKey(logLinesDroppedKey)
