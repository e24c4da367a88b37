/**
 * A batch (`PersonData.getMany`) once for both Effect lines: its options (which are refused, what
 * they default to), what becomes of each person, the totals of one run and when a person's call is
 * sent again. Each line's `internal/batch` runs it with its own Stream, fibers and clock.
 */
import * as Tally from "./batchTally.js"
import type { Line } from "./config/settings.js"
import type { ClinicalError } from "./errors.js"
import { positiveInteger } from "./validate.js"

/** What became of one person (`E`: the line's error classes). */
export type Outcome<A, E extends ClinicalError> =
  | { readonly _tag: "Success"; readonly result: A }
  | { readonly _tag: "Failure"; readonly error: E }
  /** Not sent: the batch had stopped, for `stop.reason`, because of `stop.error`. */
  | { readonly _tag: "Skipped"; readonly stop: Tally.Stop<E> }

/** One person's outcome; `index` is the person's position in the input, from 0. */
export interface Entry<A, E extends ClinicalError> {
  readonly index: number
  readonly outcome: Outcome<A, E>
}

/** How a batch runs (`DurationInput`: what the line's `Duration` reads; `OnProgress`: its callback). */
export interface Options<DurationInput, OnProgress> {
  /**
   * Calls in flight at once. Default, and most: the client's `maxConcurrentRequests` (beyond it,
   * calls would wait for a turn while their deadline runs).
   */
  readonly concurrency?: number | undefined
  /** Transport failures in a row after which the rest are skipped. Default 10. */
  readonly stopAfterTransportFailures?: number | undefined
  /**
   * How long a person's call waits for the service while the client's circuit is open (the service
   * looks down) before it fails with `CircuitOpen` and the rest are skipped. The batch pauses
   * rather than failing every person. Default 5 minutes; 0 does not wait.
   */
  readonly outagePatience?: DurationInput | undefined
  /** Called after every outcome with the totals so far (keep it quick: the batch waits for it). */
  readonly onProgress?: OnProgress | undefined
}

type AnyOptions = Options<unknown, unknown>

/** How a line reads a duration a user gave. */
export type Durations<D> = Pick<Line<unknown, D>, "decodeDuration" | "toMillis">

export const DEFAULT_STOP_AFTER_TRANSPORT_FAILURES = 10

export const DEFAULT_OUTAGE_PATIENCE_MILLIS = 5 * 60_000

/** Persons read from an iterable input at a time. */
export const READ_AHEAD = 64

/** Why an input of persons is refused (field `personUids`). */
export const NOT_PERSONS = "must be an iterable (an array, a Set, a generator) or a Stream"

/** The batch option that is refused (its name and why), or `undefined`: for a batch, and for a caller checking first. */
export const refusedOption = <D>(
  options: AnyOptions | undefined,
  durations: Durations<D>
): readonly [string, string] | undefined => {
  // `null` (from JavaScript) means the default, as `undefined` does.
  if (options !== undefined && options !== null && typeof options !== "object") {
    return ["options", "must be an object such as { concurrency, startDate, endDate }"]
  }
  const concurrency = options?.concurrency ?? undefined
  if (concurrency !== undefined && !positiveInteger(concurrency, 100_000)) {
    return ["concurrency", "must be a whole number from 1 to 100000"]
  }
  const stopAfter = options?.stopAfterTransportFailures ?? undefined
  if (stopAfter !== undefined && !positiveInteger(stopAfter, Number.MAX_SAFE_INTEGER)) {
    return ["stopAfterTransportFailures", "must be a whole number, 1 or more"]
  }
  const onProgress = options?.onProgress
  if (onProgress !== undefined && typeof onProgress !== "function") {
    return ["onProgress", "must be a function"]
  }
  if (patienceOf(options, durations) === undefined) {
    return ["outagePatience", "must be a duration, 0 or more and finite"]
  }
  return undefined
}

/** The patience the options ask for, in ms (the default when not given), or `undefined` when refused. */
const patienceOf = <D>(options: AnyOptions | undefined, durations: Durations<D>): number | undefined => {
  const given = options?.outagePatience ?? undefined
  if (given === undefined) return DEFAULT_OUTAGE_PATIENCE_MILLIS
  // Effect may read a negative duration as zero: refused here instead, as a mistake.
  if (typeof given === "number" ? !(given >= 0) : typeof given === "string" && given.trim().startsWith("-")) {
    return undefined
  }
  const decoded = durations.decodeDuration(given)
  if (decoded === undefined) return undefined
  const millis = durations.toMillis(decoded)
  return Number.isFinite(millis) && millis >= 0 ? millis : undefined
}

/** How a batch whose options were accepted runs. */
export interface Plan {
  readonly concurrency: number
  readonly stopAfterTransportFailures: number
  readonly persistence: Tally.Persistence
}

/** The plan of a batch, its options accepted by {@link refusedOption}, for a client of these settings. */
export const planOf = <D>(
  options: AnyOptions | undefined,
  durations: Durations<D>,
  maxConcurrentRequests: number,
  maxRetries: number
): Plan => ({
  // More would only wait for the client's bound on requests in flight, their deadline running.
  concurrency: Math.min(options?.concurrency ?? maxConcurrentRequests, maxConcurrentRequests),
  stopAfterTransportFailures: options?.stopAfterTransportFailures ?? DEFAULT_STOP_AFTER_TRANSPORT_FAILURES,
  // A person is sent again once after a transient failure, unless the client's retries are off.
  persistence: { patienceMillis: patienceOf(options, durations)!, resends: maxRetries > 0 ? 1 : 0 }
})

export const isIterable = <P>(input: unknown): input is Iterable<P> =>
  typeof input === "object" && input !== null && typeof (input as Iterable<P>)[Symbol.iterator] === "function"

/** An iterable's iterator, itself iterable (as a Stream built from an iterator wants), read as the Stream pulls. */
export const iterate = <P>(input: Iterable<P>): IterableIterator<P> => {
  const iterator = input[Symbol.iterator]()
  const iterable: IterableIterator<P> = { next: () => iterator.next(), [Symbol.iterator]: () => iterable }
  return iterable
}

/**
 * One run of a batch: its totals, each person's outcome counted as it settles. Plain mutable
 * state: each step is synchronous, so persons settling on many fibers never interleave within one.
 */
export class Run<E extends ClinicalError> {
  private tally: Tally.Tally<E> = Tally.initial

  constructor(private readonly stopAfterTransportFailures: number, private readonly startedAt: number) {}

  /**
   * The `Skipped` outcome of a person about to be sent, counted, once the batch has stopped; else
   * `undefined`: send it. Asked when the call would start, not when its effect is built.
   */
  skipped(): Outcome<never, E> | undefined {
    const stop = this.tally.stop
    if (stop === undefined) return undefined
    this.tally = Tally.skipped(this.tally)
    return { _tag: "Skipped", stop }
  }

  succeeded<A>(result: A): Outcome<A, E> {
    this.tally = Tally.succeeded(this.tally)
    return { _tag: "Success", result }
  }

  failed(error: E): Outcome<never, E> {
    this.tally = Tally.failed(this.tally, error, this.stopAfterTransportFailures)
    return { _tag: "Failure", error }
  }

  /** The totals so far, at `now` (ms, on the clock that gave `startedAt`). */
  progress(now: number): Tally.Progress {
    return Tally.progressOf(this.tally, now - this.startedAt)
  }
}

/**
 * A person's call sent again: while the client's circuit refuses it or the token cannot be had
 * (for at most the patience in all), and after a failure worth retrying (`resends` times); see
 * `batchTally.againAfterMillis`. One per person's call.
 */
export class Resends {
  // The wait for the service counts on the clock from the first refusal: the calls between the
  // sleeps (a probe that hangs until its timeout) are time spent waiting for the service too.
  private firstRefusedAt: number | undefined = undefined
  private resent = 0

  constructor(private readonly persistence: Tally.Persistence) {}

  /** The wait (ms) before sending the call again after `error` at `now`, or `undefined`: take the failure. */
  after(error: ClinicalError, now: number): number | undefined {
    const refused = error._tag === "CircuitOpen" || Tally.isTokenOutage(error)
    if (refused) this.firstRefusedAt ??= now
    const waited = this.firstRefusedAt === undefined ? 0 : Math.max(0, now - this.firstRefusedAt)
    const wait = Tally.againAfterMillis(error, waited, this.resent, this.persistence)
    if (wait !== undefined && !refused) this.resent++
    return wait
  }
}
