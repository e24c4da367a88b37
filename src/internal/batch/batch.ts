/**
 * Many persons through one operation: a Stream of per-person outcomes in completion order, with a
 * bounded number of calls in flight and memory that does not grow with the input. The options, the
 * outcomes, the totals and when to stop or send again are the core's (core/batchRun.ts,
 * core/batchTally.ts); this is their interpreter.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as Core from "../../../core/batchRun.js"
import type * as Tally from "../../../core/batchTally.js"
import { type ClinicalError, InvalidRequest } from "../../ClinicalError.js"
import { line } from "../validate.js"
import { mapUnordered } from "./workers.js"

/** What became of one person. */
export type Outcome<A> = Core.Outcome<A, ClinicalError>

/** One person's outcome; `index` is the person's position in the input, from 0. */
export type Entry<A> = Core.Entry<A, ClinicalError>

/** How a batch runs (see the core's `Options`). */
export type Options = Core.Options<Duration.DurationInput, (progress: Tally.Progress) => Effect.Effect<void>>

export const DEFAULT_STOP_AFTER_TRANSPORT_FAILURES = Core.DEFAULT_STOP_AFTER_TRANSPORT_FAILURES

export const DEFAULT_OUTAGE_PATIENCE: Duration.Duration = Duration.millis(Core.DEFAULT_OUTAGE_PATIENCE_MILLIS)

const isStream = <P, E, R>(input: unknown): input is Stream.Stream<P, E, R> =>
  typeof input === "object" && input !== null && Stream.StreamTypeId in input

/** The batch option that is refused (its name and why), or `undefined`: for `many`, and for a caller checking first. */
export const refusedOption = (options: Options | undefined): readonly [string, string] | undefined =>
  Core.refusedOption(options, line)

/** `call`, sent again as the core's `Resends` decides. */
const persistently = <A>(
  call: Effect.Effect<A, ClinicalError>,
  persistence: Tally.Persistence
): Effect.Effect<A, ClinicalError> =>
  Effect.suspend(() => {
    const resends = new Core.Resends(persistence)
    const attempt = (): Effect.Effect<A, ClinicalError> =>
      Effect.catchAll(call, (error) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const wait = resends.after(error, now)
          if (wait === undefined) return Effect.fail(error)
          const again = Effect.suspend(attempt)
          return wait === 0 ? again : Effect.zipRight(Effect.sleep(Duration.millis(wait)), again)
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
  defaultConcurrency: number,
  maxRetries: number
): Stream.Stream<Entry<A>, E | InvalidRequest, R> => {
  const refused = refusedOption(options)
  if (refused !== undefined) {
    return Stream.fail(new InvalidRequest({ operation, field: refused[0], reason: refused[1] }))
  }
  const plan = Core.planOf(options, line, defaultConcurrency, maxRetries)
  const onProgress = options?.onProgress
  if (!isStream<P, E, R>(input) && !Core.isIterable<P>(input)) {
    return Stream.fail(new InvalidRequest({ operation, field: "personUids", reason: Core.NOT_PERSONS }))
  }
  // An iterable is read a few persons ahead of the calls, not whole: a generator of millions is fine.
  const source = isStream<P, E, R>(input)
    ? input
    : Stream.suspend(() => Stream.fromIteratorSucceed(Core.iterate(input), Core.READ_AHEAD))

  // A fresh run (its totals) per run of the stream.
  return Stream.unwrap(Effect.map(Clock.currentTimeMillis, (startedAt) => {
    const run = new Core.Run<ClinicalError>(plan.stopAfterTransportFailures, startedAt)
    const settle = <B>(index: number, outcome: Outcome<B>): Effect.Effect<Entry<B>> => {
      const entry: Entry<B> = { index, outcome }
      if (onProgress === undefined) return Effect.succeed(entry)
      return Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.as(onProgress(run.progress(now)), entry))
    }
    const person = (element: P, index: number): Effect.Effect<Entry<A>> =>
      Effect.suspend(() => {
        const skipped = run.skipped()
        if (skipped !== undefined) return settle(index, skipped)
        return Effect.flatMap(
          Effect.either(persistently(call(element), plan.persistence)),
          (result) => settle(index, result._tag === "Right" ? run.succeeded(result.right) : run.failed(result.left))
        )
      })
    return mapUnordered(source, person, plan.concurrency)
  }))
}
