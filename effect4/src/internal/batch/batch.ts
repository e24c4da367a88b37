/**
 * Many persons through one operation: a Stream of per-person outcomes in completion order, with a
 * bounded number of calls in flight and memory that does not grow with the input. The options, the
 * outcomes, the totals and when to stop or send again are the core's (core/batchRun.ts,
 * core/batchTally.ts); this is their interpreter with Effect 4's Stream.
 *
 * Effect 4's `Stream.mapEffect(f, { concurrency, unordered: true })` runs a fiber per element under
 * a semaphore, with no stream per element (Effect 3's costs one, hence that line's own workers):
 * at most `concurrency` calls in flight, each result handed over as it is pulled.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Stream from "effect/Stream"
import * as Core from "../../../../core/batchRun.js"
import type * as Tally from "../../../../core/batchTally.js"
import { type ClinicalError, InvalidRequest } from "../../ClinicalError.js"
import { line } from "../line.js"

/** What became of one person: `Success` (its result), `Failure` (its typed error), or `Skipped` (not sent). */
export type Outcome<A> = Core.Outcome<A, ClinicalError>

/** One person's outcome; `index` is the person's position in the input, from 0. */
export type Entry<A> = Core.Entry<A, ClinicalError>

/** How a batch runs (see the core's `Options`). */
export type Options = Core.Options<Duration.Input, (progress: Tally.Progress) => Effect.Effect<void>>

export const DEFAULT_STOP_AFTER_TRANSPORT_FAILURES = Core.DEFAULT_STOP_AFTER_TRANSPORT_FAILURES

export const DEFAULT_OUTAGE_PATIENCE: Duration.Duration = Duration.millis(Core.DEFAULT_OUTAGE_PATIENCE_MILLIS)

/** The batch option that is refused (its name and why), or `undefined`: for `many`, and for a caller checking first. */
export const refusedOption = (options: Options | undefined): readonly [string, string] | undefined =>
  Core.refusedOption(options, line)

/** `call`, sent again as the core's `Resends` decides (an open circuit waited for, a transient failure resent). */
const persistently = <A>(
  call: Effect.Effect<A, ClinicalError>,
  persistence: Tally.Persistence
): Effect.Effect<A, ClinicalError> =>
  Effect.suspend(() => {
    const resends = new Core.Resends(persistence)
    const attempt = (): Effect.Effect<A, ClinicalError> =>
      Effect.catch(call, (error) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const wait = resends.after(error, now)
          if (wait === undefined) return Effect.fail(error)
          const again = Effect.suspend(attempt)
          return wait === 0 ? again : Effect.andThen(Effect.sleep(Duration.millis(wait)), again)
        }))
    return attempt()
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
  maxConcurrentRequests: number,
  maxRetries: number
): Stream.Stream<Entry<A>, E | InvalidRequest, R> => {
  const refused = refusedOption(options)
  if (refused !== undefined) {
    return Stream.fail(new InvalidRequest({ operation, field: refused[0], reason: refused[1] }))
  }
  const plan = Core.planOf(options, line, maxConcurrentRequests, maxRetries)
  const onProgress = options?.onProgress
  const stream = Stream.isStream(input)
  if (!stream && !Core.isIterable<P>(input)) {
    return Stream.fail(new InvalidRequest({ operation, field: "personUids", reason: Core.NOT_PERSONS }))
  }
  // An iterable is read a few persons ahead of the calls, not whole: a generator of millions is fine.
  const source: Stream.Stream<P, E, R> = stream
    ? input as Stream.Stream<P, E, R>
    : Stream.fromIterable(input as Iterable<P>, { chunkSize: Core.READ_AHEAD })

  // A fresh run (its totals) per run of the stream.
  return Stream.unwrap(Effect.map(Clock.currentTimeMillis, (startedAt) => {
    const run = new Core.Run<ClinicalError>(plan.stopAfterTransportFailures, startedAt)
    const settle = <B>(index: number, outcome: Outcome<B>): Effect.Effect<Entry<B>> => {
      const entry: Entry<B> = { index, outcome }
      if (onProgress === undefined) return Effect.succeed(entry)
      return Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.as(onProgress(run.progress(now)), entry))
    }
    // Run on the person's own fiber once it holds a turn: whether the batch stopped is asked then.
    const person = (element: P, index: number): Effect.Effect<Entry<A>> =>
      Effect.suspend(() => {
        const skipped = run.skipped()
        if (skipped !== undefined) return settle(index, skipped)
        return Effect.flatMap(
          Effect.result(persistently(call(element), plan.persistence)),
          (result) =>
            settle(index, Result.isSuccess(result) ? run.succeeded(result.success) : run.failed(result.failure))
        )
      })
    return Stream.mapEffect(source, person, { concurrency: plan.concurrency, unordered: true })
  }))
}
