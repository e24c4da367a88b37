/**
 * The client's metrics as plain definitions, once for both Effect lines: each line makes its own
 * `Metric` of each (Effect 3's and Effect 4's differ), so a dashboard reads the same names and
 * descriptions whichever line a process runs. Labels are drawn from small fixed sets (operation
 * names, error tags, status codes, refresh reasons): never a token, an ApplicationId or a PersonUid.
 */

/** A metric: what it is called, what it says, and (a histogram) its buckets. */
export interface Definition {
  readonly name: string
  readonly description: string
  readonly kind: "counter" | "gauge" | "histogram"
  readonly boundaries?: ReadonlyArray<number>
}

const counter = (name: string, description: string): Definition => ({ name, description, kind: "counter" })
const gauge = (name: string, description: string): Definition => ({ name, description, kind: "gauge" })

/** Token requests sent to the token endpoint. */
export const tokenRequests = counter("clinical_token_requests_total", "Token requests sent to the token endpoint")

/** Token refreshes started, by `reason` (empty, soft-window, hard-window, expired). */
export const tokenRefreshes = counter("clinical_token_refreshes_total", "Token refreshes started, by reason")

/** The last observed server clock minus the local clock, in milliseconds. */
export const serverClockSkew = gauge(
  "clinical_server_clock_skew_millis",
  "Server Date header minus local time when the token response arrived"
)

/** The lifetime of the last token obtained, in seconds, after the `maxTokenLifetime` cap. */
export const tokenLifetime = gauge(
  "clinical_token_lifetime_seconds",
  "Lifetime of the last token obtained (TOKEN_EXPIRES minus Date), after the maxTokenLifetime cap"
)

/** Retries, by `operation` and `cause` (network, timeout, or the status code). */
export const retries = counter("clinical_retries_total", "Retried attempts, by operation and cause")

/** Calls that failed, by `operation` and `error` (the error's tag). */
export const failures = counter("clinical_failures_total", "Failed calls, by operation and error tag")

/** Requests refused fast because the token endpoint asked for a pause (`Retry-After`). */
export const throttledFastFails = counter(
  "clinical_token_throttled_total",
  "Token requests refused without sending, while the token endpoint's Retry-After runs"
)

/** Requests a client lets out at once: the adaptive concurrency limit's last value (see docs/resilience.md). */
export const concurrencyLimit = gauge(
  "clinical_concurrency_limit",
  "Requests the client lets out at once (the adaptive concurrency limit)"
)

/** Attempts not sent by the load control, by `reason` (circuit-open, retry-budget). */
export const refusedByLoadControl = counter(
  "clinical_load_refusals_total",
  "Attempts the client did not send: the circuit was open, or the retry budget was spent"
)

/** Attempts per call (1 when the first attempt settled it), by `operation`. */
export const attemptsPerCall: Definition = {
  name: "clinical_call_attempts",
  description: "Attempts per call, by operation",
  kind: "histogram",
  boundaries: [1, 2, 3, 4, 5, 6, 7]
}

/** Failed operations of the shared token store, by `reason` (Timeout, Unavailable, Unreadable). */
export const tokenStoreFailures = counter(
  "clinical_token_store_failures_total",
  "Token store operations that failed or timed out, by reason"
)

/** Values in the shared token store no instance could read, replaced (see `tokenSharing`). */
export const tokenStoreRepairs = counter(
  "clinical_token_store_repairs_total",
  "Values in the shared token store no instance could read, replaced by this instance's publication"
)

/** Tokens taken from the shared token store instead of requested from the token endpoint. */
export const tokensFromStore = counter(
  "clinical_token_store_adopted_total",
  "Tokens taken from the shared token store (published by another instance)"
)

/**
 * Duration of each HTTP attempt, in seconds, as OpenTelemetry's HTTP client conventions name it,
 * by `http.request.method`, `server.address`, `server.port`, `http.response.status_code` and
 * `error.type`; with the buckets those conventions advise.
 */
export const httpClientRequestDuration: Definition = {
  name: "http.client.request.duration",
  description: "Duration of HTTP client requests, in seconds",
  kind: "histogram",
  boundaries: [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10]
}

/** Log lines an application's logger threw on (the Promise client's `logger`): dropped, counted here. */
export const logLinesDropped = counter(
  "clinical_log_lines_dropped_total",
  "Log lines dropped because the application's logger threw"
)

/** Queue jobs processed by this process's workers, by `queue` and `outcome`. */
export const queueJobs = counter(
  "clinical_queue_jobs_total",
  "Queue jobs processed by this process's workers, by queue and outcome (completed, failed, retried, paused, stalled)"
)

/** Failed attempts of queue jobs, by `queue` and `kind` (the error's kind, at most 20 apart, then `other`). */
export const queueFailures = counter(
  "clinical_queue_failures_total",
  "Failed attempts of queue jobs, by queue and failure kind"
)

/**
 * Jobs of the whole queue by `queue` and `state` (waiting, a paused queue's too; active, delayed,
 * failed, prioritized): sampled by each worker every 5 s and when it closes, and by the command
 * line when its metrics are read.
 */
export const queueDepth = gauge(
  "clinical_queue_depth",
  "Jobs in the queue by queue and state, sampled by each worker every 5 s, when it closes, and when read"
)

/** Persons a command-line batch wrote a result for this run, by `operation` and `outcome` (success, failure). */
export const batchResults = counter(
  "clinical_batch_results_total",
  "Persons a batch wrote a result line for in this run, by operation and outcome (success, failure)"
)

/** Persons in a command-line batch's input, and those already done before this run, by `operation` and `state`. */
export const batchPersons = gauge(
  "clinical_batch_persons",
  "Persons of a batch by operation and state: input (all of them), earlier (done in earlier runs)"
)

/** Whether the queue is paused (1) or not (0), by `queue`: read by the command line when its metrics are read. */
export const queuePaused = gauge(
  "clinical_queue_paused",
  "Whether the queue is paused (1: by a worker after refused credentials, or by an operator), by queue"
)

/** The queue's latest run, the whole fleet's work: its persons by `queue` and `state` (enqueued, done, failed). */
export const queueRun = gauge(
  "clinical_queue_run_persons",
  "Persons of the queue's latest run, the whole fleet's: enqueued, done, failed; by queue and state"
)

/** Whether the command line's last read of the queue from Redis succeeded (1) or not (0): the other queue gauges keep their last values meanwhile. */
export const queueRedisUp = gauge(
  "clinical_queue_redis_up",
  "Whether the last read of the queue from Redis (for these metrics) succeeded: 1, or 0 (the queue gauges are then the last read)"
)
