/**
 * A data call: POST with the bearer token and the ApplicationId, answered as JSON, made resilient.
 *
 * - Every attempt takes the current token, so a retry never carries a stale one.
 * - A 401 or 419 drops the token that was used (only if it is still the cached one), takes a
 *   fresh token and tries again at once; once per call. A second 401/419 is the caller's error.
 * - Transport failures, attempt timeouts, 429, 500, 502, 503 and 504 are retried with jittered
 *   exponential backoff, at least as long as any `Retry-After`, up to `maxRetries` times.
 * - The whole call has a deadline. A wait that would pass it is not started: the call fails at
 *   once with the error that asked for it (carrying its `Retry-After`).
 * - At most `maxConcurrentRequests` data requests are in flight per client; others wait for a turn.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Random from "effect/Random"
import type * as Redacted from "effect/Redacted"
import type * as ClinicalConfig from "../ClinicalConfig.js"
import { type ClinicalError, type HttpError, type Operation, TransportError } from "../ClinicalError.js"
import type * as HttpTransport from "../HttpTransport.js"
import type * as TokenService from "../TokenService.js"
import { withTimeout } from "./attempt.js"
import { isTokenRejected, readJson } from "./response.js"
import { delayMillis, fromConfig, retryAfterOf, retryCause } from "./retryPolicy.js"
import * as Telemetry from "./telemetry.js"

/** A successful answer: its status and its JSON body. */
export interface JsonResponse {
  readonly status: number
  readonly json: unknown
}

/** What a call is. */
export interface Call {
  readonly operation: Operation
  readonly url: string
  /** The request body; it holds a PersonUid, so it stays redacted. */
  readonly body: Redacted.Redacted<string>
  /** Secrets the request carries besides the token and ApplicationId, to scrub from server text. */
  readonly secrets: ReadonlyArray<Redacted.Redacted<string>>
  /** True for an operation that changes data: retried only when `retryWrites` allows it. */
  readonly writes: boolean
}

/** Makes one call and returns its JSON body, or the typed error it ended in. */
export type AuthorizedPost = (call: Call) => Effect.Effect<JsonResponse, HttpError>

/** One attempt's outcome, before the retry decision. */
type Outcome =
  | {
    readonly _tag: "Answered"
    readonly token: TokenService.AccessToken
    readonly response: HttpTransport.TransportResponse
  }
  | { readonly _tag: "Failed"; readonly error: HttpError }

/** Builds the call function over the given services. */
export const make = (
  config: ClinicalConfig.Service,
  transport: HttpTransport.Service,
  tokens: TokenService.Service
): AuthorizedPost => {
  const policy = fromConfig(config)
  const deadlineMillis = Duration.toMillis(config.deadline)
  const permits = Effect.unsafeMakeSemaphore(config.maxConcurrentRequests)

  return (call) => {
    const { operation } = call
    const retries = Metric.tagged(Telemetry.retries, "operation", operation)
    const failures = Metric.tagged(Telemetry.failures, "operation", operation)
    const attemptsMetric = Metric.tagged(Telemetry.attemptsPerCall, "operation", operation)

    const request = (token: TokenService.AccessToken): HttpTransport.TransportRequest => ({
      method: "POST",
      url: call.url,
      headers: {
        "Content-Type": "application/json",
        Authorization: token.authorization,
        ApplicationId: config.applicationId
      },
      body: call.body,
      maxResponseBytes: config.maxResponseBytes
    })

    // The token is taken inside the attempt; the permit is held only while the request is in flight.
    const attempt: Effect.Effect<Outcome> = tokens.get.pipe(
      Effect.flatMap((token) => {
        const sent = request(token)
        return permits.withPermits(1)(withTimeout(transport.send(sent), sent, operation, config.requestTimeout)).pipe(
          Effect.map((response): Outcome => ({ _tag: "Answered", token, response }))
        )
      }),
      Effect.catchAll((error) => Effect.succeed<Outcome>({ _tag: "Failed", error }))
    )

    const deadlinePassed = (): HttpError =>
      new TransportError({
        operation,
        reason: "Deadline",
        method: "POST",
        url: call.url,
        detail: `the call's deadline of ${Duration.format(config.deadline)} passed`
      })

    return Effect.gen(function*() {
      const startedAt = yield* Clock.currentTimeMillis
      const deadlineAt = startedAt + deadlineMillis
      let attempts = 0
      let retried = 0
      let tokenRefreshed = false
      const settle = (status: number | undefined) =>
        Effect.zipRight(
          Metric.update(attemptsMetric, attempts),
          Effect.annotateCurrentSpan({
            "clinical.attempts": attempts,
            ...(status === undefined ? {} : { "http.response.status_code": status })
          })
        )
      const fail = (error: HttpError, status: number | undefined) =>
        settle(status).pipe(
          Effect.zipRight(Metric.increment(Metric.tagged(failures, "error", error._tag))),
          Effect.zipRight(Effect.annotateCurrentSpan("clinical.error", error._tag)),
          Effect.zipRight(Effect.fail(error))
        )

      while (true) {
        attempts++
        const remaining = deadlineAt - (yield* Clock.currentTimeMillis)
        const outcome = yield* attempt.pipe(
          Effect.timeoutTo({
            duration: Duration.millis(Math.max(0, remaining)),
            onSuccess: (outcome) => outcome,
            onTimeout: (): Outcome => ({ _tag: "Failed", error: deadlinePassed() })
          })
        )
        let error: HttpError
        let status: number | undefined
        if (outcome._tag === "Answered") {
          status = outcome.response.status
          if (isTokenRejected(status) && !tokenRefreshed) {
            tokenRefreshed = true
            yield* Effect.logDebug("token rejected; refreshing it and retrying once").pipe(
              Effect.annotateLogs({ status, generation: outcome.token.generation })
            )
            yield* tokens.invalidate(outcome.token)
            continue
          }
          const now = yield* Clock.currentTimeMillis
          const secrets = [...call.secrets, outcome.token.token, config.applicationId]
          const read = yield* Effect.either(readJson({ operation, secrets, now }, outcome.response))
          if (read._tag === "Right") {
            yield* settle(status)
            return { status, json: read.right }
          }
          error = read.left
        } else {
          error = outcome.error
          status = "status" in error ? error.status : undefined
        }

        const cause = retryCause(error as ClinicalError)
        if (cause === undefined || retried >= policy.maxRetries || (call.writes && !config.retryWrites)) {
          return yield* fail(error, status)
        }
        const delay = delayMillis(policy, retried + 1, yield* Random.next, retryAfterOf(error as ClinicalError))
        if ((yield* Clock.currentTimeMillis) + delay >= deadlineAt) return yield* fail(error, status)
        retried++
        yield* Metric.increment(Metric.tagged(retries, "cause", cause))
        yield* Effect.logDebug("retrying").pipe(
          Effect.annotateLogs({ cause, retry: retried, delayMillis: Math.round(delay) })
        )
        yield* Effect.sleep(Duration.millis(delay))
      }
    })
  }
}
