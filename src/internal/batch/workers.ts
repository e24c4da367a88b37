/**
 * A Stream mapped by a fixed number of worker fibers, results in completion order. It does what
 * `Stream.mapEffect(f, { concurrency, unordered: true })` does, at a fraction of the cost: in
 * Effect 3 that one builds a stream per element (about 230 us each on the benchmark machine),
 * which would cost a batch more than its HTTP calls.
 *
 * One feeder fiber reads the source and hands elements to the workers through a queue as large as
 * the pool; the workers leave results in a buffer of at most twice that, which the stream reads
 * whole, as one chunk. Each element costs the same whatever the concurrency.
 * Memory is bounded by the concurrency and the source's chunk size, whatever the source's length.
 * Closing the stream interrupts the feeder and the workers.
 */
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"

/** `f` over every element of `source` (with its position, from 0), `concurrency` at a time, in completion order. */
export const mapUnordered = <A, B, E, R>(
  source: Stream.Stream<A, E, R>,
  f: (element: A, index: number) => Effect.Effect<B>,
  concurrency: number
): Stream.Stream<B, E, R> =>
  Stream.fromPull(Effect.gen(function*() {
    const work = yield* Queue.bounded<Option.Option<readonly [A, number]>>(concurrency)

    // Results wait here for the reader, at most `limit` of them: a full buffer holds the workers
    // back. Each wait checks its condition and registers in one synchronous step (inside
    // `Effect.async`), so that a wake-up cannot fall between the two.
    const limit = concurrency * 2
    let results: Array<B> = []
    let finished: Effect.Effect<never, Option.Option<E>> | undefined
    let reader: ((resume: Effect.Effect<void>) => void) | undefined
    let writers: Array<(resume: Effect.Effect<void>) => void> = []
    const wakeReader = () => {
      const waiting = reader
      reader = undefined
      waiting?.(Effect.void)
    }
    const finish = (outcome: Effect.Effect<never, Option.Option<E>>) =>
      Effect.sync(() => {
        finished ??= outcome
        wakeReader()
      })

    // The feeder: every element with its index, then one "no more" per worker.
    let index = 0
    yield* Stream.runForEachChunk(
      source,
      (chunk) => Queue.offerAll(work, Chunk.map(chunk, (element) => Option.some([element, index++] as const)))
    ).pipe(
      Effect.zipRight(Queue.offerAll(work, Array.from({ length: concurrency }, () => Option.none()))),
      Effect.onExit((exit) =>
        Exit.isFailure(exit) ? finish(Effect.failCause(Cause.map(exit.cause, Option.some))) : Effect.void
      ),
      Effect.forkScoped
    )

    const offer = (result: B): Effect.Effect<void> =>
      Effect.async<void>((resume) => {
        results.push(result)
        wakeReader()
        if (results.length < limit) resume(Effect.void)
        else writers.push(resume)
      })

    const worker: Effect.Effect<void> = Effect.flatMap(Queue.take(work), (next) =>
      Option.isNone(next)
        ? Effect.void
        : Effect.zipRight(Effect.flatMap(f(next.value[0], next.value[1]), offer), worker))

    yield* Effect.forEach(Array.from({ length: concurrency }), () => worker, {
      concurrency: "unbounded",
      discard: true
    }).pipe(
      Effect.onExit((exit) =>
        finish(Exit.isSuccess(exit) ? Effect.fail(Option.none()) : Effect.failCause(Cause.map(exit.cause, Option.some)))
      ),
      Effect.forkScoped
    )

    // What the stream pulls: every result ready (one chunk), else the end, else a wait for one.
    const read: Effect.Effect<Chunk.Chunk<B>, Option.Option<E>> = Effect.suspend(() => {
      if (results.length > 0) {
        const chunk = Chunk.unsafeFromArray(results)
        results = []
        const waiting = writers
        writers = []
        for (const resume of waiting) resume(Effect.void)
        return Effect.succeed(chunk)
      }
      if (finished !== undefined) return finished
      return Effect.zipRight(
        Effect.async<void>((resume) => {
          if (results.length > 0 || finished !== undefined) resume(Effect.void)
          else reader = resume
          return Effect.sync(() => {
            if (reader === resume) reader = undefined
          })
        }),
        read
      )
    })
    return read
  }))
