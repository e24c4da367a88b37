/**
 * A bound on work in flight, first come first served. Unlike `Semaphore.withPermitsIfAvailable`,
 * a newcomer never overtakes a waiting caller (so waiters cannot starve under load), and a free
 * turn is taken with no Effect of its own: the common case costs one counter increment.
 *
 * Two forms of the same gate: `take`/`leave` for code that runs in callbacks (the call's common
 * path waits for its turn inside the same callback that sends), and `run` for an Effect.
 *
 * Its size may change while it is used (the concurrency limit moves it): a larger size lets
 * waiters in at once; a smaller one takes effect as turns are given back (a turn given back while
 * more than the size are out is freed, not handed on), never by cutting a request short.
 */
import * as Effect from "effect/Effect"
import { callback } from "./callback.js"

/** The bound; `run` holds a turn while `effect` runs. */
export interface Gate {
  /**
   * Asks for a turn: `granted` is called once the turn is this caller's, at once (before `take`
   * returns) when one is free and nobody waits. Returns a function that withdraws the request if
   * the turn was not given yet, and tells whether it was (then the caller holds it, and must
   * `leave`).
   */
  readonly take: (granted: () => void) => () => boolean
  /** Gives a turn back: to the first waiter, or free. */
  readonly leave: () => void
  /** Runs `effect` in a turn, waiting for one (in arrival order) when none is free. */
  readonly run: <A, E>(effect: Effect.Effect<A, E>) => Effect.Effect<A, E>
  /** Turns taken and not given back. */
  readonly inFlight: () => number
  /** Sets how many turns there are (1 or more). */
  readonly resize: (size: number) => void
}

/**
 * One caller waiting for a turn. A class, not an object literal: a waiter can wait long, and V8
 * would pretenure such a literal under load (see `callback`).
 */
class Waiter {
  granted = false
  constructor(readonly wake: () => void) {}
}

/** A gate of `initialSize` turns. */
export const make = (initialSize: number): Gate => {
  let size = initialSize
  let inFlight = 0
  const queue: Array<Waiter> = []

  const grantFirst = () => {
    const next = queue.shift()!
    next.granted = true
    next.wake()
  }

  // A finishing caller hands its turn straight to the first waiter, or frees it (and frees it
  // while more than the size are out, the size having come down).
  const leave = () => {
    if (queue.length === 0 || inFlight > size) inFlight--
    else grantFirst()
  }

  const resize = (next: number) => {
    size = next
    while (inFlight < size && queue.length > 0) {
      inFlight++
      grantFirst()
    }
  }

  const take = (granted: () => void): () => boolean => {
    if (inFlight < size && queue.length === 0) {
      inFlight++
      granted()
      return () => true
    }
    const waiter = new Waiter(granted)
    queue.push(waiter)
    return () => {
      if (waiter.granted) return true
      const at = queue.indexOf(waiter)
      if (at >= 0) queue.splice(at, 1)
      return false
    }
  }

  const release = Effect.sync(leave)

  const wait = callback<void>((resume) => {
    const withdraw = take(() => resume(Effect.void))
    // Interrupted while waiting: leave the queue; if the turn was already handed over, pass it on.
    return () => {
      if (withdraw()) leave()
    }
  })

  return {
    take,
    leave,
    inFlight: () => inFlight,
    resize,
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
