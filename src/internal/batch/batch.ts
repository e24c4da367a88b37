/**
 * Many persons through one operation: a Stream of per-person outcomes in completion order, with a
 * bounded number of calls in flight and memory that does not grow with the input. The decisions
 * (the totals, when to stop) are `batchTally`'s; this is their interpreter.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as Tally from "../../../core/batchTally.js"
import { type ClinicalError, InvalidRequest } from "../../ClinicalError.js"
import * as validate from "../validate.js"
import { mapUnordered } from "./workers.js"

/** What became of one person. */
export type Outcome<A> =
  | { readonly _tag: "Success"; readonly result: A }
  | { readonly _tag: "Failure"; readonly error: ClinicalError }
  /** Not sent: the batch had stopped, for `stop.reason`, because of `stop.error`. */
  | { readonly _tag: "Skipped"; readonly stop: Tally.Stop<ClinicalError> }

/** One person's outcome; `index` is the person's position in the input, from 0. */
export interface Entry<A> {
  readonly index: number
  readonly outcome: Outcome<A>
}

/** How a batch runs. */
export interface Options {
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
  readonly outagePatience?: Duration.DurationInput | undefined
  /** Called after every outcome with the totals so far (keep it quick: the batch waits for it). */
  readonly onProgress?: ((progress: Tally.Progress) => Effect.Effect<void>) | undefined
}

export const DEFAULT_STOP_AFTER_TRANSPORT_FAILURES = 10

export const DEFAULT_OUTAGE_PATIENCE: Duration.Duration = Duration.minutes(5)

/** Persons read from an iterable input at a time. */
const READ_AHEAD = 64

const isStream = <P, E, R>(input: unknown): input is Stream.Stream<P, E, R> =>
  typeof input === "object" && input !== null && Stream.StreamTypeId in input

const isIterable = <P>(input: unknown): input is Iterable<P> =>
  typeof input === "object" && input !== null && typeof (input as Iterable<P>)[Symbol.iterator] === "function"

/** An iterable's iterator, itself iterable (as `fromIteratorSucceed` wants). */
const iterate = <P>(input: Iterable<P>): IterableIterator<P> => {
  const iterator = input[Symbol.iterator]()
  const iterable: IterableIterator<P> = { next: () => iterator.next(), [Symbol.iterator]: () => iterable }
  return iterable
}

/** The batch option that is refused (its name and why), or `undefined`: for `many`, and for a caller checking first. */
export const refusedOption = (options: Options | undefined): readonly [string, string] | undefined => {
  // `null` (from JavaScript) means the default, as `undefined` does.
  if (options !== undefined && options !== null && typeof options !== "object") {
    return ["options", "must be an object such as { concurrency, startDate, endDate }"]
  }
  const concurrency = options?.concurrency ?? undefined
  if (concurrency !== undefined && !validate.positiveInteger(concurrency, 100_000)) {
    return ["concurrency", "must be a whole number from 1 to 100000"]
  }
  const stopAfter = options?.stopAfterTransportFailures ?? undefined
  if (stopAfter !== undefined && !validate.positiveInteger(stopAfter, Number.MAX_SAFE_INTEGER)) {
    return ["stopAfterTransportFailures", "must be a whole number, 1 or more"]
  }
  const onProgress = options?.onProgress
  if (onProgress !== undefined && typeof onProgress !== "function") {
    return ["onProgress", "must be a function"]
  }
  if (patienceOf(options) === undefined) return ["outagePatience", "must be a duration, 0 or more and finite"]
  return undefined
}

/** The patience the options ask for, in ms (the default when not given), or `undefined` when refused. */
const patienceOf = (options: Options | undefined): number | undefined => {
  const given = options?.outagePatience ?? undefined
  if (given === undefined) return Duration.toMillis(DEFAULT_OUTAGE_PATIENCE)
  // Effect reads a negative duration as zero: refused here instead, as a mistake.
  if (typeof given === "number" ? !(given >= 0) : typeof given === "string" && given.trim().startsWith("-")) {
    return undefined
  }
  const decoded = Duration.decodeUnknown(given)
  if (Option.isNone(decoded)) return undefined
  const millis = Duration.toMillis(decoded.value)
  return Number.isFinite(millis) && millis >= 0 ? millis : undefined
}

/**
 * `call`, sent again while the client's circuit refuses it (for at most the patience in all) and
 * after a failure worth retrying (`resends` times): see `batchTally.againAfterMillis`.
 */
const persistently = <A>(
  call: Effect.Effect<A, ClinicalError>,
  persistence: Tally.Persistence
): Effect.Effect<A, ClinicalError> =>
  Effect.suspend(() => {
    // The wait for an open circuit counts on the clock from the first refusal: the calls between
    // the sleeps (a probe that hangs until its timeout) are time spent waiting for the service too.
    let firstRefusedAt: number | undefined
    const attempt = (resent: number): Effect.Effect<A, ClinicalError> =>
      Effect.catchAll(call, (error) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          if (error._tag === "CircuitOpen") firstRefusedAt ??= now
          const waited = firstRefusedAt === undefined ? 0 : Math.max(0, now - firstRefusedAt)
          const wait = Tally.againAfterMillis(error, waited, resent, persistence)
          if (wait === undefined) return Effect.fail(error)
          const again = Effect.suspend(() => attempt(error._tag === "CircuitOpen" ? resent : resent + 1))
          return wait === 0 ? again : Effect.zipRight(Effect.sleep(Duration.millis(wait)), again)
        }))
    return attempt(0)
  })

/**
 * Runs `call` for every person of `input` (an iterable, read lazily, or a Stream). The options are
 * checked first: a refused one fails the stream with `InvalidRequest`, before anything is sent.
 */
export const many = <P, A, E, R>(
  operation: string,
  call: (person: P) => Effect.Effect<A, ClinicalError>,
  input: Iterable<P> | Stream.Stream<P, E, R>,
  options: Options | undefined,
  defaultConcurrency: number,
  maxRetries: number
): Stream.Stream<Entry<A>, E | InvalidRequest, R> => {
  const refused = refusedOption(options)
  if (refused !== undefined) {
    return Stream.fail(new InvalidRequest({ operation, field: refused[0], reason: refused[1] }))
  }
  // More would only wait for the client's bound on requests in flight, their deadline running.
  const concurrency = Math.min(options?.concurrency ?? defaultConcurrency, defaultConcurrency)
  const stopAfter = options?.stopAfterTransportFailures ?? DEFAULT_STOP_AFTER_TRANSPORT_FAILURES
  // A person is sent again once after a transient failure, unless the client's retries are off.
  const persistence: Tally.Persistence = { patienceMillis: patienceOf(options)!, resends: maxRetries > 0 ? 1 : 0 }
  const onProgress = options?.onProgress
  if (!isStream<P, E, R>(input) && !isIterable<P>(input)) {
    return Stream.fail(
      new InvalidRequest({
        operation,
        field: "personUids",
        reason: "must be an iterable (an array, a Set, a generator) or a Stream"
      })
    )
  }
  // An iterable is read a few persons ahead of the calls, not whole: a generator of millions is fine.
  const source = isStream<P, E, R>(input)
    ? input
    : Stream.suspend(() => Stream.fromIteratorSucceed(iterate(input), READ_AHEAD))

  // A fresh tally per run of the stream. Plain mutable state: each update is one synchronous step.
  return Stream.unwrap(Effect.map(Clock.currentTimeMillis, (startedAt) => {
    let tally: Tally.Tally<ClinicalError> = Tally.initial
    const settle = (index: number, outcome: Outcome<A>): Effect.Effect<Entry<A>> => {
      const entry: Entry<A> = { index, outcome }
      if (onProgress === undefined) return Effect.succeed(entry)
      return Effect.flatMap(
        Clock.currentTimeMillis,
        (now) => Effect.as(onProgress(Tally.progressOf(tally, now - startedAt)), entry)
      )
    }
    // Decided when the call would start, not when the stream builds its effect (which can be earlier).
    const run = (person: P, index: number): Effect.Effect<Entry<A>> =>
      Effect.suspend(() => {
        if (tally.stop !== undefined) {
          const stop = tally.stop
          tally = Tally.skipped(tally)
          return settle(index, { _tag: "Skipped", stop })
        }
        return Effect.flatMap(Effect.either(persistently(call(person), persistence)), (result) => {
          if (result._tag === "Right") {
            tally = Tally.succeeded(tally)
            return settle(index, { _tag: "Success", result: result.right })
          }
          tally = Tally.failed(tally, result.left, stopAfter)
          return settle(index, { _tag: "Failure", error: result.left })
        })
      })
    return mapUnordered(source, run, concurrency)
  }))
}
