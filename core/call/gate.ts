/**
 * A bound on work in flight, first come first served. Unlike `Semaphore.withPermitsIfAvailable`,
 * a newcomer never overtakes a waiting caller (so waiters cannot starve under load), and a free
 * turn is taken with no Effect of its own: the common case costs one counter increment.
 *
 * `take`/`leave` serve code that runs in callbacks (the call's common path waits for its turn inside
 * the same callback that sends); each Effect line adds `run`, the same gate for an Effect.
 *
 * Its size may change while it is used (the concurrency limit moves it): a larger size lets
 * waiters in at once; a smaller one takes effect as turns are given back (a turn given back while
 * more than the size are out is freed, not handed on), never by cutting a request short.
 */
/** The bound. */
export interface Gate {
  /**
   * Asks for a turn: `granted` is called once the turn is this caller's, at once (before `take`
   * returns) when one is free and nobody waits. Returns a function that withdraws the request if
   * the turn was not given yet, and tells whether it was (then the caller holds it, and must
   * `leave`).
   */
  readonly take: (granted: () => void) => () => boolean
  /** Takes a turn if one is free and nobody waits (then the caller must `leave`); never waits. */
  readonly tryTake: () => boolean
  /** Gives a turn back: to the first waiter, or free. */
  readonly leave: () => void
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

/** The withdrawal of a request granted at once: nothing to withdraw, the turn is held. */
const HELD = (): boolean => true

/** A gate of `initialSize` turns. */
export const make = (initialSize: number): Gate => {
  let size = initialSize
  let inFlight = 0
  const queue: Array<Waiter> = []
  // Waiters handed a turn and not woken yet. They are woken one after another by the outermost
  // hand-off, never from inside another waiter's wake: a waiter that gives its turn back as soon
  // as it gets it would otherwise hand it on one stack frame deeper per waiter (a long queue
  // overflowed the stack, and the turns of the rest were lost).
  const ready: Array<Waiter> = []
  let waking = false

  const wakeReady = () => {
    if (waking) return
    waking = true
    let failure: { readonly thrown: unknown } | undefined
    try {
      for (let next = ready.shift(); next !== undefined; next = ready.shift()) {
        next.granted = true
        try {
          next.wake()
        } catch (thrown) {
          // The others are woken all the same; the first throw goes on to the caller after.
          failure ??= { thrown }
        }
      }
    } finally {
      waking = false
    }
    if (failure !== undefined) throw failure.thrown
  }

  // The turn goes to the first waiter (counted in flight still), woken once no wake is running.
  const handToFirst = () => {
    ready.push(queue.shift()!)
  }

  // A finishing caller hands its turn straight to the first waiter, or frees it (and frees it
  // while more than the size are out, the size having come down).
  const leave = () => {
    if (queue.length === 0 || inFlight > size) inFlight--
    else handToFirst()
    wakeReady()
  }

  const resize = (next: number) => {
    size = next
    while (inFlight < size && queue.length > 0) {
      inFlight++
      handToFirst()
    }
    wakeReady()
  }

  const tryTake = (): boolean => {
    if (inFlight >= size || queue.length > 0) return false
    inFlight++
    return true
  }

  const take = (granted: () => void): () => boolean => {
    if (tryTake()) {
      granted()
      return HELD
    }
    const waiter = new Waiter(granted)
    queue.push(waiter)
    return () => {
      if (waiter.granted) return true
      const at = queue.indexOf(waiter)
      if (at >= 0) {
        queue.splice(at, 1)
        return false
      }
      // Handed a turn, not woken yet: it never will be, and the turn goes on to the next.
      const handed = ready.indexOf(waiter)
      if (handed >= 0) {
        ready.splice(handed, 1)
        leave()
      }
      return false
    }
  }

  return {
    take,
    tryTake,
    leave,
    inFlight: () => inFlight,
    resize
  }
}
