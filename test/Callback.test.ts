/**
 * `callback`, the wait for a callback that the undici transport, the gate and the call's common
 * path are built on: it must do what `Effect.async` with a canceler does (a value or a failure as
 * resumed; the work called off exactly once when the wait is interrupted, never otherwise).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import { callback } from "../src/internal/call/callback.js"

/** A wait whose resume and cancellations the test sees. */
const observed = <A, E>() => {
  const seen = { resume: undefined as ((effect: Effect.Effect<A, E>) => void) | undefined, cancelled: 0 }
  const wait = callback<A, E>((resume) => {
    seen.resume = resume
    return () => {
      seen.cancelled++
    }
  })
  return { seen, wait }
}

describe("callback", () => {
  it.effect("a value resumed at once (inside register) is the result; nothing is called off", () =>
    Effect.gen(function*() {
      let cancelled = 0
      const result = yield* callback<number>((resume) => {
        resume(Effect.succeed(42))
        return () => {
          cancelled++
        }
      })
      expect(result).toBe(42)
      expect(cancelled).toBe(0)
    }))

  it.effect("a value resumed later is the result; nothing is called off", () =>
    Effect.gen(function*() {
      const { seen, wait } = observed<string, never>()
      const fiber = yield* Effect.fork(wait)
      yield* Effect.yieldNow()
      seen.resume!(Effect.succeed("answer"))
      expect(yield* Fiber.join(fiber)).toBe("answer")
      expect(seen.cancelled).toBe(0)
    }))

  it.effect("a failure resumed is the failure; nothing is called off", () =>
    Effect.gen(function*() {
      const { seen, wait } = observed<string, string>()
      const fiber = yield* Effect.fork(wait)
      yield* Effect.yieldNow()
      seen.resume!(Effect.fail("refused"))
      expect(yield* Fiber.await(fiber)).toEqual(Exit.fail("refused"))
      expect(seen.cancelled).toBe(0)
    }))

  it.effect("interrupted while waiting: the work is called off once, and a late resume changes nothing", () =>
    Effect.gen(function*() {
      const { seen, wait } = observed<string, never>()
      const fiber = yield* Effect.fork(wait)
      yield* Effect.yieldNow()
      const exit = yield* Fiber.interrupt(fiber)
      expect(Exit.isInterrupted(exit)).toBe(true)
      expect(seen.cancelled).toBe(1)
      seen.resume!(Effect.succeed("too late"))
      yield* Effect.yieldNow()
      expect(seen.cancelled).toBe(1)
    }))

  it.effect("interrupted in what the resumed effect runs: called off, as Effect.async's canceler is", () =>
    Effect.gen(function*() {
      const { seen, wait } = observed<string, never>()
      const fiber = yield* Effect.fork(wait)
      yield* Effect.yieldNow()
      seen.resume!(Effect.never)
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(fiber)
      // Effect.async does the same (its canceler guards the resumed effect too), so callers'
      // cancelers check their own state: the common path's gives no turn back twice.
      expect(seen.cancelled).toBe(1)
    }))

  it.effect("a register that returns nothing: interruption still ends the wait", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(callback<void>(() => {}))
      yield* Effect.yieldNow()
      expect(Exit.isInterrupted(yield* Fiber.interrupt(fiber))).toBe(true)
    }))
})
