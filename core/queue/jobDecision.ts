/**
 * What a queue worker does with a person's failed call, as a pure function: BullMQ's semantics
 * chosen by the typed error. The worker interprets the decision (throws, pauses the queue).
 *
 * | the call failed with | decision | in BullMQ |
 * |---|---|---|
 * | the person's own answer: `ApiError`, 400, a body that does not read, an unexpected status, a refused PersonUid | `Permanent` | `UnrecoverableError`: failed at once, whatever attempts are left |
 * | 429, or a 503 with `Retry-After` | `PauseFleet` for the `Retry-After` | `queue.rateLimit(ms)`, the job back to waiting (no attempt spent) |
 * | the client's circuit open (the service looks down) | `PauseFleet` until the probe | the same |
 * | refused credentials (the token endpoint refused the ApplicationId; a fresh token refused) | `PauseQueue` | `queue.pause()` with the reason recorded, the job back to waiting |
 * | a refused operation or date range (every person would fail the same) | `PauseQueue` | the same |
 * | anything else (the network, a 5xx, a timeout, the token store) | `Retry` | thrown: BullMQ retries with backoff, up to the job's attempts |
 */
import { isFinal, stopReasonOf } from "../batchTally.js"
import type { ClinicalError } from "../errors.js"

export type Decision =
  | { readonly _tag: "Permanent" }
  | { readonly _tag: "Retry" }
  | { readonly _tag: "PauseFleet"; readonly millis: number }
  | { readonly _tag: "PauseQueue"; readonly reason: string }

/** The shortest fleet pause: a 429 without `Retry-After` still pauses the fleet this long. */
export const MIN_PAUSE_MILLIS = 1_000

/** What a worker does after `error`. */
export const decide = (error: ClinicalError): Decision => {
  if (isFinal(error)) return { _tag: "Permanent" }
  switch (error._tag) {
    case "RateLimited":
      return { _tag: "PauseFleet", millis: Math.max(MIN_PAUSE_MILLIS, error.retryAfterMillis ?? 0) }
    case "ServerError":
      return error.retryAfterMillis === undefined
        ? { _tag: "Retry" }
        : { _tag: "PauseFleet", millis: Math.max(MIN_PAUSE_MILLIS, error.retryAfterMillis) }
    case "CircuitOpen":
      return { _tag: "PauseFleet", millis: Math.max(MIN_PAUSE_MILLIS, error.retryAfterMillis) }
  }
  switch (stopReasonOf(error, 0, Number.POSITIVE_INFINITY)) {
    case "CredentialsRefused":
      return {
        _tag: "PauseQueue",
        reason: error.operation === "token"
          ? `the token endpoint refused the ApplicationId (${error._tag}): check CLINICAL_APPLICATION_ID`
          : `the service refused a fresh token (${error._tag}): check the ApplicationId and the service's hosts`
      }
    case "InvalidRequest":
      return { _tag: "PauseQueue", reason: `every person would be refused: ${kindOf(error)} of the request` }
    default:
      return { _tag: "Retry" }
  }
}

/** Characters a failure kind keeps: it becomes a metric label and a line of `queue status`. */
const KIND_UNSAFE = /[^A-Za-z0-9_.-]/g

/**
 * How failures are grouped (BullMQ's failed reason starts with it, metrics label by it): the tag,
 * and an `ApiError`'s `ErrorType` (the server's words: cut to 40 safe characters) or a
 * `TransportError`'s reason. Never a value of the request: `scrub` (the person's redactor) runs
 * on the server's words whole, before they are made safe and cut (a PersonUid cut in half, or its
 * `+/=` made `?`, would no longer be recognised).
 */
export const kindOf = (error: ClinicalError, scrub: (text: string) => string = (text) => text): string => {
  switch (error._tag) {
    case "ApiError":
      return error.errorType === null
        ? error._tag
        : `${error._tag} ${scrub(error.errorType).replace(KIND_UNSAFE, "?").slice(0, 40)}`
    case "TransportError":
      return `${error._tag} ${error.reason}`
    case "InvalidRequest":
      return `${error._tag} ${scrub(error.field).replace(KIND_UNSAFE, "?").slice(0, 40)}`
    default:
      return error._tag
  }
}
