/**
 * Waiting for a callback, with the work behind it called off when the wait is interrupted: what
 * `Effect.async` does when its register function returns a canceler, built differently for the
 * garbage collector's sake.
 *
 * `Effect.async` wraps a canceler in `onInterrupt`, whose options object lives as long as the wait
 * and points (through the canceler) at everything the waiting call holds. Under load, V8 sees
 * objects from that object literal survive young-generation collections and "pretenures" it:
 * allocates it in the old generation from then on. From there it keeps the call's young objects
 * alive until the next full collection, which pretenures their literals in turn. Measured on the
 * call's common path, that cascade promoted every call's objects (the parsed answer included) and
 * doubled the CPU per call. Here the cleanup is a function given to `Effect.catchAllCause`, which
 * keeps no object literal alive, and the canceler is held by a closure (V8 pretenures literals, not
 * closures or class instances). See docs/architecture.md.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"

/**
 * An Effect that runs `register` and waits until it calls `resume`. `register` may return a
 * function that calls the work off; it runs (once, uninterruptibly) when the wait is
 * interrupted before `resume` was called, as `Effect.async`'s canceler does.
 */
export const callback = <A, E = never>(
  register: (resume: (effect: Effect.Effect<A, E>) => void) => (() => void) | void
): Effect.Effect<A, E> =>
  // What Effect.onExit does, less its work on success: the wait interruptible, the cleanup not.
  Effect.uninterruptibleMask((restore) => {
    let cancel: (() => void) | void = undefined
    return Effect.catchAllCause(
      // One parameter: Effect.async makes an AbortController for a register function of two.
      restore(Effect.async<A, E>((resume) => {
        cancel = register(resume)
      })),
      (cause) =>
        cancel !== undefined && Cause.isInterruptedOnly(cause)
          ? Effect.zipRight(Effect.sync(cancel), Effect.failCause(cause))
          : Effect.failCause(cause)
    )
  })
