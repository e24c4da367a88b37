/**
 * The turns of a client's bound on requests in flight (src/internal/call/gate.ts), as callers see
 * them: given in arrival order, let out at once when the bound grows, and never lost to a call
 * interrupted just as its turn came. Issue 37 planted three bugs here (the newest waiter served
 * first, one waiter let in per growth, a turn handed to an interrupted waiter kept by nobody), and
 * no test noticed: the order test before this one recorded the order of the transport's scripted
 * answers, whichever call took them.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, FiberId } from "effect"
import { MedicationService } from "effect-clinical"
import * as Gate from "../src/internal/call/gate.js"
import * as Fake from "./support/FakeService.js"

/** The persons the service was asked about, in the order their requests reached it. */
const personsAsked = (fake: Fake.FakeService) =>
  Effect.map(fake.dataRequests, (requests) => requests.map((request) => /caller-\w+/.exec(request.body ?? "")?.[0]))

/** Lets forked fibers run until they wait. */
const settle = Effect.forEach(Array.from({ length: 20 }), () => Effect.yieldNow(), { discard: true })

// One turn: the limit off, so that the gate's size is maxConcurrentRequests.
const oneAtATime = { maxConcurrentRequests: 1, adaptiveConcurrency: false, maxRetries: 0 } as const

describe("a client's turns", () => {
  it.effect("are given in the order the calls asked for them", () =>
    Fake.withClient(
      (fake) =>
        Effect.gen(function*() {
          const release = yield* Deferred.make<void>()
          yield* fake.scriptData(() => Effect.as(Deferred.await(release), Fake.MEDICATIONS_ANSWER))
          const first = yield* Effect.fork(MedicationService.get("caller-first"))
          yield* settle
          const waiting = []
          for (const name of ["second", "third", "fourth"]) {
            waiting.push(yield* Effect.fork(MedicationService.get(`caller-${name}`)))
            yield* settle
          }
          yield* Deferred.succeed(release, undefined)
          yield* Fiber.join(first)
          for (const fiber of waiting) yield* Fiber.join(fiber)
          expect(yield* personsAsked(fake)).toEqual(["caller-first", "caller-second", "caller-third", "caller-fourth"])
        }),
      oneAtATime
    ))
})

describe("the gate", () => {
  it.effect("a caller interrupted just as its turn came does not keep it: the next caller gets it", () =>
    Effect.gen(function*() {
      const gate = Gate.make(1)
      gate.take(() => {})
      const waiting = yield* Effect.fork(gate.run(Effect.void))
      yield* settle
      // Told to stop, then handed the turn, before it runs again: it hears of both together.
      yield* Effect.sync(() => {
        waiting.unsafeInterruptAsFork(FiberId.none)
        gate.leave()
      })
      expect((yield* Fiber.await(waiting))._tag).toBe("Failure")
      expect(gate.inFlight()).toBe(0)
      // Before, the turn stayed taken: this one waited for ever.
      const next = yield* Effect.fork(gate.run(Effect.succeed("went")))
      yield* settle
      expect(yield* Fiber.poll(next)).toMatchObject({ _tag: "Some", value: { _tag: "Success", value: "went" } })
    }))

  it("lets as many waiters in, in order, as it grows by, at once", () => {
    const gate = Gate.make(1)
    const granted: Array<string> = []
    for (const name of ["a", "b", "c", "d", "e"]) gate.take(() => granted.push(name))
    expect(granted).toEqual(["a"])
    gate.resize(4)
    expect(granted).toEqual(["a", "b", "c", "d"])
    expect(gate.inFlight()).toBe(4)
    // Smaller: no one is cut short; turns given back are freed until it fits.
    gate.resize(2)
    gate.leave()
    gate.leave()
    expect(gate.inFlight()).toBe(2)
    expect(granted).toEqual(["a", "b", "c", "d"])
    gate.leave()
    expect(granted).toEqual(["a", "b", "c", "d", "e"])
    expect(gate.inFlight()).toBe(2)
  })

  // Found by review: a waiter that gives its turn back as soon as it gets it (the circuit opened,
  // or its deadline passed, while it waited) handed it on from inside its own wake, one stack frame
  // deeper per waiter: 2,500 waiters overflowed the stack, and the turns of the rest were lost.
  it("a long queue whose waiters each give the turn back at once: every one granted in order, no stack overflow", () => {
    const gate = Gate.make(1)
    const granted: Array<number> = []
    expect(gate.tryTake()).toBe(true)
    const count = 20_000
    for (let i = 0; i < count; i++) {
      gate.take(() => {
        granted.push(i)
        gate.leave()
      })
    }
    gate.leave()
    expect(granted).toEqual(Array.from({ length: count }, (_, i) => i))
    expect(gate.inFlight()).toBe(0)
    expect(gate.tryTake()).toBe(true)
  })

  it("a waiter withdrawn after its turn came but before it was woken: the turn goes to the next, and it is never woken", () => {
    const gate = Gate.make(1)
    const granted: Array<string> = []
    expect(gate.tryTake()).toBe(true)
    let withdrawB: () => boolean = () => true
    let withdrawnB: boolean | undefined
    gate.take(() => {
      granted.push("a")
      // While a's turn is being handed over, a gives it back (b's turn now) and b is called off.
      gate.leave()
      withdrawnB = withdrawB()
    })
    withdrawB = gate.take(() => granted.push("b"))
    gate.take(() => granted.push("c"))
    gate.leave()
    expect(granted).toEqual(["a", "c"])
    // b did not get the turn: it need not give it back (c holds it).
    expect(withdrawnB).toBe(false)
    expect(gate.inFlight()).toBe(1)
    gate.leave()
    expect(gate.inFlight()).toBe(0)
  })
})
