/**
 * The core's gate (core/call/gate.ts) with `run`: the same first-come-first-served bound for an
 * Effect 4 effect. A free turn is taken with no Effect of its own.
 */
import * as Effect from "effect/Effect"
import * as Core from "../../../../core/call/gate.js"

/** The bound; `run` holds a turn while `effect` runs. */
export interface Gate extends Core.Gate {
  /** Runs `effect` in a turn, waiting for one (in arrival order) when none is free. */
  readonly run: <A, E>(effect: Effect.Effect<A, E>) => Effect.Effect<A, E>
}

/** A gate of `initialSize` turns. */
export const make = (initialSize: number): Gate => {
  const gate = Core.make(initialSize)
  const release = Effect.sync(gate.leave)
  const wait = Effect.callback<void>((resume) => {
    const withdraw = gate.take(() => resume(Effect.void))
    // Interrupted while waiting: leave the queue; if the turn was already handed over, pass it on.
    return Effect.sync(() => {
      if (withdraw()) gate.leave()
    })
  })
  return {
    ...gate,
    run: (effect) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.suspend(() =>
          gate.tryTake()
            ? Effect.ensuring(restore(effect), release)
            : Effect.flatMap(restore(wait), () => Effect.ensuring(restore(effect), release))
        )
      )
  }
}
