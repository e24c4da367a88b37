/**
 * The retry policy: which failures are worth another attempt, and how long to wait before it.
 * Exponential backoff with "equal jitter" (half the delay fixed, half random), so that clients
 * that failed together do not retry together, and a `Retry-After` is always honoured.
 */
import type { ClinicalError } from "../errors.js"

/** The settings the policy reads, in milliseconds. */
export interface RetryPolicy {
  readonly maxRetries: number
  readonly baseDelayMillis: number
  readonly maxDelayMillis: number
  /** Whether a 429 is retried; false ends the call with it (a caller pauses a fleet on it). */
  readonly retryRateLimited: boolean
}

const RETRIED_STATUSES: ReadonlySet<number> = new Set([429, 500, 502, 503, 504])

/**
 * Why a failure may be retried (the label of the retries metric), or `undefined` when it must not
 * be: transport failures (a name that did not resolve included) and attempt timeouts, 429, 500,
 * 502, 503 and 504, a token store that did not answer. A certificate refused and a proxy's refusal
 * are not retried. A passed deadline, an oversized body, any 4xx but 429, every decode or envelope
 * failure and a token store value that cannot be read end the call.
 */
export const retryCause = (error: ClinicalError): string | undefined => {
  switch (error._tag) {
    case "TransportError":
      // A name that did not resolve may resolve next time; a certificate or a proxy's refusal will not change.
      return error.reason === "Network"
        ? "network"
        : error.reason === "Timeout"
        ? "timeout"
        : error.reason === "Dns"
        ? "dns"
        : undefined
    case "RateLimited":
    case "ServerError":
      return RETRIED_STATUSES.has(error.status) ? String(error.status) : undefined
    case "TokenStoreError":
      // A shared store that did not answer, under `onUnavailable: "fail"`: it may be back soon.
      return error.reason === "Unreadable" ? undefined : "token-store"
    default:
      return undefined
  }
}

/** The server's `Retry-After`, in milliseconds, if the failure carries one. */
export const retryAfterOf = (error: ClinicalError): number | undefined =>
  // Stryker disable next-line ConditionalExpression: equivalent, only these two carry a `retryAfterMillis`
  error._tag === "RateLimited" || error._tag === "ServerError" ? error.retryAfterMillis : undefined

/**
 * The wait before retry number `retry` (1 for the first): `base * 2^(retry - 1)`, capped at the
 * maximum, of which the second half is scaled by `random` (in [0, 1)); never less than `retryAfter`;
 * rounded up to a whole millisecond.
 */
export const delayMillis = (
  policy: Pick<RetryPolicy, "baseDelayMillis" | "maxDelayMillis">,
  retry: number,
  random: number,
  retryAfter: number | undefined
): number => {
  const exponential = Math.min(policy.maxDelayMillis, policy.baseDelayMillis * 2 ** (retry - 1))
  const jittered = exponential / 2 + (random * exponential) / 2
  // Whole milliseconds: the clock stays on whole milliseconds, so deadlines compare exactly.
  return Math.ceil(Math.max(jittered, retryAfter ?? 0))
}
