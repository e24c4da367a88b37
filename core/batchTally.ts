/**
 * A batch's running totals and its one decision: whether a failure means every person still to
 * come would fail the same way, so that sending on would only repeat it. Pure: `PersonData.getMany`
 * interprets it.
 */
import { retryAfterOf, retryCause } from "./call/retryPolicy.js"
import type { ClinicalError } from "./errors.js"

/**
 * Why a batch stopped early:
 * - `CredentialsRefused`: the token endpoint refused the ApplicationId, or a data host refused a
 *   fresh token (401/419 after the client's refresh and resend);
 * - `InvalidRequest`: the operation's definition or the batch's options (the date range) were
 *   refused, before anything was sent;
 * - `TransportFailures`: that many transport failures in a row (the host is down or unreachable);
 * - `ServiceDown`: the client's circuit stayed open longer than the batch's `outagePatience`.
 */
export type StopReason = "CredentialsRefused" | "InvalidRequest" | "TransportFailures" | "ServiceDown"

/** Why the batch stopped, and the error that decided it. */
export interface Stop<E extends ClinicalError = ClinicalError> {
  readonly reason: StopReason
  readonly error: E
}

/** The totals so far. */
export interface Tally<E extends ClinicalError = ClinicalError> {
  readonly succeeded: number
  readonly failed: number
  readonly skipped: number
  /** Transport failures since the last outcome of another kind. */
  readonly transportFailuresInARow: number
  readonly stop: Stop<E> | undefined
}

export const initial: Tally<never> = {
  succeeded: 0,
  failed: 0,
  skipped: 0,
  transportFailuresInARow: 0,
  stop: undefined
}

/** Whether `error` would hit every person still to come; `undefined` when it concerns this person only. */
export const stopReasonOf = (
  error: ClinicalError,
  transportFailuresInARow: number,
  stopAfterTransportFailures: number
): StopReason | undefined => {
  switch (error._tag) {
    case "Unauthorized":
    case "TokenExpired":
      return "CredentialsRefused"
    case "BadRequest":
    case "ApiError":
      // From the token endpoint these refuse the ApplicationId; from a data host, this person.
      return error.operation === "token" ? "CredentialsRefused" : undefined
    case "InvalidRequest":
      // A PersonUid is this person's; the operation, the schema and the date range are everyone's.
      return error.field === "personUid" ? undefined : "InvalidRequest"
    case "TransportError":
      return error.reason !== "ResponseTooLarge" && transportFailuresInARow >= stopAfterTransportFailures
        ? "TransportFailures"
        : undefined
    case "CircuitOpen":
      // A person's call gets it only once the batch waited out its patience for the service.
      return "ServiceDown"
    default:
      return undefined
  }
}

/**
 * How long a person's call waits before it is sent again, after the client's circuit refused it
 * (`retryAfterMillis`, when the service is probed) having already waited `waitedMillis`; or
 * `undefined` once that would outlast `patienceMillis`: the service is down for longer than the
 * batch waits, and the person fails with `CircuitOpen`.
 */
export const circuitWaitMillis = (
  retryAfterMillis: number,
  waitedMillis: number,
  patienceMillis: number
): number | undefined => {
  // At least a millisecond: a refusal at the probe's very time must not spin.
  const wait = Math.max(1, retryAfterMillis)
  return waitedMillis + wait > patienceMillis ? undefined : wait
}

export const succeeded = <E extends ClinicalError>(tally: Tally<E>): Tally<E> => ({
  ...tally,
  succeeded: tally.succeeded + 1,
  transportFailuresInARow: 0
})

/** A person failed; the first failure that would hit everyone stops the batch (later ones keep that reason). */
export const failed = <E extends ClinicalError>(
  tally: Tally<E>,
  error: E,
  stopAfterTransportFailures: number
): Tally<E> => {
  // A body too large is this person's; the others say the host cannot be reached.
  // A deadline that passed before the request went (the call waited for a turn) says nothing of the host.
  const inARow = error._tag === "TransportError" && error.reason !== "ResponseTooLarge" &&
      !(error.reason === "Deadline" && error.requestSent === false)
    ? tally.transportFailuresInARow + 1
    : 0
  const reason = tally.stop === undefined ? stopReasonOf(error, inARow, stopAfterTransportFailures) : undefined
  return {
    ...tally,
    failed: tally.failed + 1,
    transportFailuresInARow: inARow,
    stop: reason === undefined ? tally.stop : { reason, error }
  }
}

export const skipped = <E extends ClinicalError>(tally: Tally<E>): Tally<E> => ({
  ...tally,
  skipped: tally.skipped + 1
})

/** What a caller watching a batch sees. */
export interface Progress {
  /** Persons with an outcome: succeeded + failed + skipped. */
  readonly done: number
  readonly succeeded: number
  readonly failed: number
  readonly skipped: number
  readonly elapsedMillis: number
  /** Persons sent and answered per second so far (skipped ones excluded). */
  readonly perSecond: number
  /** Why the batch stopped early, if it did. */
  readonly stopped: StopReason | undefined
}

export const progressOf = (tally: Tally<ClinicalError>, elapsedMillis: number): Progress => {
  const answered = tally.succeeded + tally.failed
  return {
    done: answered + tally.skipped,
    succeeded: tally.succeeded,
    failed: tally.failed,
    skipped: tally.skipped,
    elapsedMillis,
    perSecond: elapsedMillis > 0 ? (answered * 1000) / elapsedMillis : 0,
    stopped: tally.stop?.reason
  }
}

/** How a batch sends a person's call again. */
export interface Persistence {
  /** Longest wait in all for a client whose circuit is open. */
  readonly patienceMillis: number
  /** Calls sent again after one that ended in a failure worth retrying. */
  readonly resends: number
}

/**
 * How long a batch waits before sending again a call that found no token because the token
 * endpoint (or the shared store) failed as a service down does, unless it asked for longer: the
 * call's own retries (750 ms, 1.5 s and 3 s at the defaults) start over then, and every call of
 * the batch waits for the same token request, so that a dead endpoint sees about one request a
 * second from the whole batch.
 */
export const TOKEN_OUTAGE_RECHECK_MILLIS = 1000

/**
 * Whether a failure is the token's, and may go away (the network, a timeout, 429, 5xx, a store that
 * did not answer): not this person's, but every call's until the endpoint is back, so the batch
 * waits for it as it waits for an open circuit. A failed token request counts once towards the
 * breaker however many calls waited for it (`LoadControl.endedUnsent`): the calls of a batch that
 * share each one spend their retries before the circuit opens, and would otherwise all fail.
 */
export const isTokenOutage = (error: ClinicalError): boolean =>
  "operation" in error && error.operation === "token" && retryCause(error) !== undefined

/**
 * What a batch does with a person's failed call, having waited `waitedMillis` for the service (an
 * open circuit, the token's outage) and sent it again `resent` times: the wait before sending it
 * again, or `undefined` to take the failure. An open circuit is waited for (see
 * {@link circuitWaitMillis}), and so is the token's outage ({@link isTokenOutage}: its
 * `Retry-After`, or {@link TOKEN_OUTAGE_RECHECK_MILLIS}), for the patience in all; any other failure
 * worth retrying (the network, a timeout, 429, 5xx: the call's own retries spent) is sent again
 * after its `Retry-After`, `resends` times. Each call sent again is a new call, its retries its
 * own: at 30% of requests failing at random, four attempts leave 0.8% of persons failed, eight 0.007%.
 */
export const againAfterMillis = (
  error: ClinicalError,
  waitedMillis: number,
  resent: number,
  persistence: Persistence
): number | undefined => {
  if (error._tag === "CircuitOpen") {
    return circuitWaitMillis(error.retryAfterMillis, waitedMillis, persistence.patienceMillis)
  }
  if (isTokenOutage(error)) {
    const wait = Math.max(TOKEN_OUTAGE_RECHECK_MILLIS, retryAfterOf(error) ?? 0)
    return circuitWaitMillis(wait, waitedMillis, persistence.patienceMillis)
  }
  return resent < persistence.resends && retryCause(error) !== undefined ? retryAfterOf(error) ?? 0 : undefined
}

/**
 * Whether a failure is the person's own answer, done for good (the service refused this person:
 * `ApiError`, a 400, a body that cannot be read, an unexpected status, a refused PersonUid), rather
 * than something that may go away (the network, a 5xx, a 429, refused credentials, a refused
 * option), whose person a resumed batch sends again.
 */
export const isFinal = (error: unknown): boolean => {
  // Stryker disable next-line ConditionalExpression: equivalent, anything but an object has no _tag either
  if (typeof error !== "object" || error === null) return false
  const { _tag, field, operation } = error as { _tag?: unknown; field?: unknown; operation?: unknown }
  switch (_tag) {
    case "ApiError":
    case "BadRequest":
    case "ResponseDecodeError":
    case "UnexpectedStatus":
      return operation !== "token"
    case "InvalidRequest":
      return field === "personUid"
    default:
      return false
  }
}
