/**
 * A bound on work in flight, first come first served. Unlike `Semaphore.withPermitsIfAvailable`,
 * a newcomer never overtakes a waiting caller (so waiters cannot starve under load), and a free
 * turn is taken with no Effect of its own: the common case costs one counter increment.
 */
import * as Effect from "effect/Effect"

/** One caller waiting for a turn. `granted` is set when a finishing caller hands it the turn. */
interface Waiter {
  granted: boolean
  readonly wake: () => void
}

/** The bound; `run` holds a turn while `effect` runs. */
export interface Gate {
  /** Runs `effect` in a turn, waiting for one (in arrival order) when none is free. */
  readonly run: <A, E>(effect: Effect.Effect<A, E>) => Effect.Effect<A, E>
}

/** A gate of `size` turns. */
export const make = (size: number): Gate => {
  let inFlight = 0
  const queue: Array<Waiter> = []

  // A finishing caller hands its turn straight to the first waiter, or frees it.
  const release = Effect.sync(() => {
    const next = queue.shift()
    if (next === undefined) inFlight--
    else {
      next.granted = true
      next.wake()
    }
  })

  const wait = Effect.async<void>((resume) => {
    const waiter: Waiter = { granted: false, wake: () => resume(Effect.void) }
    queue.push(waiter)
    // Interrupted while waiting: leave the queue; if the turn was already handed over, pass it on.
    return Effect.suspend(() => {
      if (waiter.granted) return release
      const at = queue.indexOf(waiter)
      if (at >= 0) queue.splice(at, 1)
      return Effect.void
    })
  })

  return {
    run: (effect) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.suspend(() => {
          if (inFlight < size && queue.length === 0) {
            inFlight++
            return Effect.ensuring(restore(effect), release)
          }
          return Effect.flatMap(restore(wait), () => Effect.ensuring(restore(effect), release))
        })
      )
  }
}
