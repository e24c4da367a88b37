/**
 * The retry budget's and the circuit breaker's decisions (core/call/retryBudget.ts,
 * core/call/circuitBreaker.ts), as pure functions, row by row of their tables.
 */
import type { Clock } from "effect"
import { describe, expect, it } from "vitest"
import * as CircuitBreaker from "../core/call/circuitBreaker.js"
import * as DeliveryCap from "../core/call/deliveryCap.js"
import * as RetryBudget from "../core/call/retryBudget.js"
import { BadRequest, TransportError } from "../src/ClinicalError.js"
import * as Gate from "../src/internal/call/gate.js"
import { LoadControl, Signal } from "../src/internal/call/loadControl.js"

describe("the retry budget", () => {
  const settings: RetryBudget.Settings = { ratio: 0.5, perSecond: 10, windowMillis: 2000 }

  it("the floor is perSecond over the window: what a quiet client may retry at once", () => {
    expect(RetryBudget.floor(settings)).toBe(20)
    expect(RetryBudget.floor(RetryBudget.DEFAULTS)).toBe(100)
  })

  it("time takes the balance towards the floor, e^(-elapsed / window) of the way left; no time, nothing", () => {
    expect(RetryBudget.balanceAt(settings, 120, 1000, 3000)).toBeCloseTo(20 + 100 * Math.exp(-1), 10)
    expect(RetryBudget.balanceAt(settings, 0, 0, 2000)).toBeCloseTo(20 - 20 * Math.exp(-1), 10)
    expect(RetryBudget.balanceAt(settings, 3, 1000, 1000)).toBe(3)
    // A clock that went back adds nothing.
    expect(RetryBudget.balanceAt(settings, 3, 1000, 900)).toBe(3)
    // Long after, the floor whatever came before; from the start (never counted), the floor.
    expect(RetryBudget.balanceAt(settings, 5000, 0, 1_000_000)).toBe(20)
    expect(RetryBudget.balanceAt(settings, 0, Number.NEGATIVE_INFINITY, 0)).toBe(20)
  })

  it("a first attempt deposits ratio, with no cap: a burst deposits in full", () => {
    expect(RetryBudget.afterFirstAttempt(settings, 3)).toBe(3.5)
    expect(RetryBudget.afterFirstAttempt(settings, 1000)).toBe(1000.5)
  })

  it("a retry takes 1 when there is 1; with less it is refused", () => {
    expect(RetryBudget.afterRetry(1)).toBe(0)
    expect(RetryBudget.afterRetry(2.5)).toBe(1.5)
    expect(RetryBudget.afterRetry(0.99)).toBeUndefined()
  })

  /** Calls `calls` calls over `spreadMillis`, each failing with probability `failing` per attempt (up to 3 retries): retries sent, refused. */
  const run = (calls: number, spreadMillis: number, failing: (call: number, attempt: number) => boolean) => {
    let balance = RetryBudget.floor(settings)
    let at = Number.NEGATIVE_INFINITY
    let retries = 0
    let refused = 0
    for (let call = 0; call < calls; call++) {
      const now = (call * spreadMillis) / calls
      balance = RetryBudget.afterFirstAttempt(settings, RetryBudget.balanceAt(settings, balance, at, now))
      at = now
      for (let attempt = 0; attempt < 3 && failing(call, attempt); attempt++) {
        const after = RetryBudget.afterRetry(balance)
        if (after === undefined) {
          refused++
          break
        }
        balance = after
        retries++
      }
    }
    return { retries, refused }
  }

  it("when every call fails, retries stay near ratio of the first attempts, not the retries each call may take", () => {
    const { retries } = run(1000, 1000, () => true)
    // ratio x 1,000, the floor, and at most perSecond for the one second (the balance, spent,
    // creeps back towards the floor).
    expect(retries).toBeGreaterThanOrEqual(500)
    expect(retries).toBeLessThanOrEqual(500 + 20 + 10)
  })

  it("a burst of a thousand calls at once with a sixth failing takes every retry it asks for", () => {
    const { refused, retries } = run(1000, 0, (call, attempt) => attempt === 0 && call % 6 === 0)
    expect(retries).toBe(167)
    expect(refused).toBe(0)
  })
})

describe("the circuit breaker", () => {
  const settings: CircuitBreaker.Settings = {
    failureThreshold: 3,
    cooldownMillis: 500,
    maxCooldownMillis: 2000,
    probeTimeoutMillis: 10_000
  }
  const fail = (state: CircuitBreaker.State, now: number, sentAt = now) =>
    CircuitBreaker.afterOutcome(settings, state, false, sentAt, now)
  const answer = (state: CircuitBreaker.State, now: number, sentAt = now) =>
    CircuitBreaker.afterOutcome(settings, state, true, sentAt, now)

  it("closed: calls go; failures in a row are counted, an answer starts the count again", () => {
    expect(CircuitBreaker.admit(settings, CircuitBreaker.closed, 0)).toEqual({
      _tag: "Go",
      state: CircuitBreaker.closed
    })
    const twice = fail(fail(CircuitBreaker.closed, 1), 2)
    expect(twice).toEqual({ _tag: "Closed", failures: 2 })
    expect(answer(twice, 3)).toEqual(CircuitBreaker.closed)
    // Nothing to change: the same state.
    expect(answer(CircuitBreaker.closed, 3)).toBe(CircuitBreaker.closed)
  })

  it("the threshold's failure opens it for a cool-down; calls are refused until then, and outcomes change nothing", () => {
    const open = fail(fail(fail(CircuitBreaker.closed, 1), 2), 10)
    expect(open).toEqual({ _tag: "Open", until: 510, cooldownMillis: 500 })
    expect(CircuitBreaker.admit(settings, open, 509)).toEqual({ _tag: "Refused", retryAt: 510 })
    expect(answer(open, 20)).toBe(open)
    expect(fail(open, 20)).toBe(open)
  })

  it("at its time, one call goes as the probe; the others are refused while it runs, to ask again in 100 ms", () => {
    const open: CircuitBreaker.State = { _tag: "Open", until: 510, cooldownMillis: 500 }
    const probing = CircuitBreaker.admit(settings, open, 510)
    expect(probing).toEqual({ _tag: "Go", state: { _tag: "HalfOpen", cooldownMillis: 500, since: 510 } })
    const halfOpen = (probing as { state: CircuitBreaker.State }).state
    expect(CircuitBreaker.admit(settings, halfOpen, 520)).toEqual({ _tag: "Refused", retryAt: 620 })
    // A cool-down shorter than that: the cool-down.
    const brief: CircuitBreaker.State = { _tag: "HalfOpen", cooldownMillis: 40, since: 510 }
    expect(CircuitBreaker.admit(settings, brief, 520)).toEqual({ _tag: "Refused", retryAt: 560 })
  })

  it("half-open: a probe never heard of (interrupted, never sent) is given up after probeTimeoutMillis: another call probes", () => {
    const halfOpen: CircuitBreaker.State = { _tag: "HalfOpen", cooldownMillis: 500, since: 510 }
    // Refused until the probe is given up, never past that.
    expect(CircuitBreaker.admit(settings, halfOpen, 10_450)).toEqual({ _tag: "Refused", retryAt: 10_510 })
    expect(CircuitBreaker.admit(settings, halfOpen, 10_510)).toEqual({
      _tag: "Go",
      state: { _tag: "HalfOpen", cooldownMillis: 500, since: 10_510 }
    })
  })

  it("half-open: an answer closes it; the probe's failure opens it again for twice as long, up to the longest", () => {
    const halfOpen: CircuitBreaker.State = { _tag: "HalfOpen", cooldownMillis: 500, since: 510 }
    expect(answer(halfOpen, 530)).toEqual(CircuitBreaker.closed)
    expect(fail(halfOpen, 530)).toEqual({ _tag: "Open", until: 1530, cooldownMillis: 1000 })
    const long: CircuitBreaker.State = { _tag: "HalfOpen", cooldownMillis: 1500, since: 0 }
    expect(fail(long, 100)).toEqual({ _tag: "Open", until: 2100, cooldownMillis: 2000 })
  })

  it("half-open: a failure of a request sent before the probe is not the probe's; its answer still closes it", () => {
    const halfOpen: CircuitBreaker.State = { _tag: "HalfOpen", cooldownMillis: 500, since: 510 }
    expect(fail(halfOpen, 530, 509)).toBe(halfOpen)
    expect(answer(halfOpen, 530, 509)).toEqual(CircuitBreaker.closed)
  })

  it("a probe abandoned (its call interrupted): open with its time come, the next call probes; anything else unchanged", () => {
    const halfOpen: CircuitBreaker.State = { _tag: "HalfOpen", cooldownMillis: 1000, since: 500 }
    const reopened = CircuitBreaker.abandoned(halfOpen, 500, 700)
    expect(reopened).toEqual({ _tag: "Open", until: 700, cooldownMillis: 1000 })
    expect(CircuitBreaker.admit(settings, reopened, 700)).toEqual({
      _tag: "Go",
      state: { _tag: "HalfOpen", cooldownMillis: 1000, since: 700 }
    })
    // Another probe's, or no probe at all: nothing to give up.
    expect(CircuitBreaker.abandoned(halfOpen, 400, 700)).toBe(halfOpen)
    expect(CircuitBreaker.abandoned(CircuitBreaker.closed, 500, 700)).toBe(CircuitBreaker.closed)
    const open: CircuitBreaker.State = { _tag: "Open", until: 900, cooldownMillis: 1000 }
    expect(CircuitBreaker.abandoned(open, 500, 700)).toBe(open)
  })

  it("a service down for long sees at most one request per longest cool-down once it has grown", () => {
    let state: CircuitBreaker.State = CircuitBreaker.closed
    const sent: Array<number> = []
    // A call asks every 10 ms for 20 s; every request fails at once.
    for (let now = 0; now < 20_000; now += 10) {
      const admission = CircuitBreaker.admit(settings, state, now)
      if (admission._tag === "Refused") continue
      sent.push(now)
      state = fail(admission.state, now)
    }
    const late = sent.filter((at) => at >= 5000)
    expect(late.length).toBeLessThanOrEqual(Math.ceil(15_000 / 2000))
    expect(late.length).toBeGreaterThanOrEqual(Math.floor(15_000 / 2010))
  })
})

describe("a client's load control when the service comes back (the breaker closing)", () => {
  /** A clock whose time the test sets. */
  const clockAt = () => {
    let millis = 0
    const clock = {
      unsafeCurrentTimeNanos: () => BigInt(millis) * 1_000_000n,
      unsafeCurrentTimeMillis: () => millis
    } as unknown as Clock.Clock
    return { clock, set: (to: number) => (millis = to) }
  }
  /** A load control starting at `initialLimit`, a breaker opening after 3 failures; the gate's size as the gauge sees it. */
  const make = (initialLimit: number) => {
    const gate = Gate.make(1)
    const sizes: Array<number> = []
    const control = new LoadControl(
      {
        limit: { min: 1, max: 64, backoffRatio: 0.7, increase: 0.03, slowStart: 0.5 },
        latency: undefined,
        initialLimit,
        budget: undefined,
        breaker: { failureThreshold: 3, cooldownMillis: 500, maxCooldownMillis: 2000, probeTimeoutMillis: 10_000 }
      },
      gate,
      (size) => sizes.push(size)
    )
    return { control, gate, size: () => sizes.at(-1)! }
  }
  type Made = ReturnType<typeof make>
  const end = ({ control }: Made, signal: Signal, clock: Clock.Clock, sentAt = control.sentAt(clock)) =>
    control.ended(control.sending(true, 0), sentAt, signal, clock)
  /** A round trip of answers with the gate full: `size` of them. */
  const roundTrip = (made: Made, clock: Clock.Clock) => {
    const size = made.size()
    while (made.gate.inFlight() < size) made.gate.take(() => {})
    for (let i = 0; i < size; i++) end(made, Signal.Answer, clock)
  }
  /** An outage: three failures open the breaker; at 600 ms a probe goes and ends in `probe`. */
  const outage = (made: Made, failure: Signal, probe: Signal) => {
    const { clock, set } = clockAt()
    for (let i = 0; i < 3; i++) end(made, failure, clock)
    expect(made.control.closed()).toBe(false)
    set(600)
    expect(made.control.admit(clock)).toBeUndefined()
    end(made, probe, clock, made.control.probeSince())
    expect(made.control.closed()).toBe(true)
    return clock
  }

  it("503s brought the limit down from slow start: slow start again, half of itself more each round trip", () => {
    const made = make(4)
    const clock = outage(made, Signal.Overloaded, Signal.Answer)
    expect(made.size()).toBe(1)
    // 1.5, 2, 3, 4.5, 6.5: the gate lets the whole part out.
    for (const expected of [1, 2, 3, 4, 6]) {
      roundTrip(made, clock)
      expect(made.size()).toBe(expected)
    }
  })

  it("a service whose capacity was found (20): the limit returns half the way to it each round trip, not past it", () => {
    const made = make(20)
    const { clock } = clockAt()
    end(made, Signal.Throttled, clock) // 20 overloads it: 14, good 20
    const clockAfter = outage(made, Signal.Overloaded, Signal.Answer)
    expect(made.size()).toBe(4) // 14 x 0.7 x 0.7 x 0.7
    roundTrip(made, clockAfter)
    expect(made.size()).toBeGreaterThanOrEqual(8)
    expect(made.size()).toBeLessThanOrEqual(12)
  })

  it("answers to requests sent before the outage, coming between its first 503s, do not make it forget the capacity found", () => {
    const made = make(20)
    const { clock, set } = clockAt()
    end(made, Signal.Throttled, clock) // 20 overloads it: 14, good 20
    // Three requests out when the service went down: their answers come between its first 503s.
    const before = [0, 1, 2].map(() => made.control.sending(true, 0))
    for (const number of before) {
      end(made, Signal.Overloaded, clock)
      made.control.ended(number, made.control.sentAt(clock), Signal.Answer, clock)
    }
    for (let i = 0; i < 3; i++) end(made, Signal.Overloaded, clock)
    expect(made.control.closed()).toBe(false)
    set(600)
    expect(made.control.admit(clock)).toBeUndefined()
    end(made, Signal.Answer, clock, made.control.probeSince())
    expect(made.size()).toBe(1) // 14 x 0.7^6 = 1.65
    // Half the way back to 19 (the 20 found) in a round trip, here one answer: 1.65 + 17.35 / 2 / 1.65.
    // Before, each 503 after an answer took `good` from the limit the outage had cut: 2.
    roundTrip(made, clock)
    expect(made.size()).toBe(6)
  })

  it("a limit of 1 capped by what it delivers (answers a little slower than the fastest) still grows", () => {
    const gate = Gate.make(1)
    const sizes: Array<number> = []
    const control = new LoadControl(
      {
        limit: { min: 1, max: 64, backoffRatio: 0.7, increase: 0.03, slowStart: 0.5 },
        latency: undefined,
        delivery: DeliveryCap.DEFAULTS,
        initialLimit: 2,
        budget: undefined,
        breaker: undefined
      },
      gate,
      (size) => sizes.push(size)
    )
    const { clock, set } = clockAt()
    control.ended(control.sending(true, 0), control.sentAt(clock), Signal.Throttled, clock) // 1.4, good 2
    // One request at a time, 20 or 21 ms each: before, the cap (twice the 0.95 answered a round
    // trip, rounded down) held the limit at 1 for good, a batch at a twentieth of its pace.
    let now = 0
    for (let i = 0; i < 400; i++) {
      gate.take(() => {})
      const number = control.sending(true, now)
      const sentMillis = control.roundTripClock(clock)
      now += 20 + (i % 2)
      set(now)
      control.ended(number, control.sentAt(clock), Signal.Answer, clock, sentMillis, 1)
      gate.leave()
    }
    expect(sizes.at(-1)).toBeGreaterThanOrEqual(2)
  })

  it("an outage of 500s (the limit untouched) changes nothing of it; a probe answered 429 keeps what the 429 said", () => {
    const down = make(20)
    const { clock } = clockAt()
    end(down, Signal.Throttled, clock) // 14, good 20
    const after = outage(down, Signal.Down, Signal.Answer)
    expect(down.size()).toBe(14)
    roundTrip(down, after)
    // Towards 19, half the way a round trip (15 and some), not doubled (28).
    expect(down.size()).toBeGreaterThanOrEqual(15)
    expect(down.size()).toBeLessThanOrEqual(17)
    const full = make(20)
    end(full, Signal.Throttled, clock)
    const later = outage(full, Signal.Down, Signal.Throttled)
    expect(full.size()).toBe(9) // 14 x 0.7
    roundTrip(full, later)
    // Towards the 14 the 429 came at (10), not the 20 found before the outage (12), nor doubled (18).
    expect(full.size()).toBe(10)
  })
})

describe("a client's load control told of calls that found no token (LoadControl.endedUnsent)", () => {
  const clock = { unsafeCurrentTimeNanos: () => 0n, unsafeCurrentTimeMillis: () => 0 } as unknown as Clock.Clock
  const make = () =>
    new LoadControl(
      {
        limit: undefined,
        latency: undefined,
        initialLimit: 4,
        budget: undefined,
        breaker: { failureThreshold: 3, cooldownMillis: 500, maxCooldownMillis: 2000, probeTimeoutMillis: 10_000 }
      },
      Gate.make(4),
      () => {}
    )
  const tokenTimeout = () =>
    new TransportError({
      operation: "token",
      reason: "Timeout",
      method: "POST",
      url: "https://auth.example/api/Server/Token",
      detail: "no answer within 10 s"
    })

  it("one failed token request counts once, however many calls (first attempts or retries) waited for it", () => {
    const control = make()
    // Two token requests, each failed, each shared by 200 calls: two failures, under the threshold of 3.
    for (let request = 0; request < 2; request++) {
      const shared = tokenTimeout()
      for (let call = 0; call < 200; call++) control.endedUnsent(Number.NEGATIVE_INFINITY, shared, clock)
    }
    expect(control.closed()).toBe(true)
    expect(control.admit(clock)).toBeUndefined()
    // A third request's failure is the third in a row: the circuit opens.
    control.endedUnsent(Number.NEGATIVE_INFINITY, tokenTimeout(), clock)
    expect(control.closed()).toBe(false)
    expect(control.admit(clock)).toBe(500)
  })

  it("an answer between them starts the count again; a failure that says nothing of the service counts nothing", () => {
    const control = make()
    control.endedUnsent(Number.NEGATIVE_INFINITY, tokenTimeout(), clock)
    control.endedUnsent(Number.NEGATIVE_INFINITY, tokenTimeout(), clock)
    control.ended(control.sending(true, 0), control.sentAt(clock), Signal.Answer, clock)
    control.endedUnsent(Number.NEGATIVE_INFINITY, tokenTimeout(), clock)
    control.endedUnsent(Number.NEGATIVE_INFINITY, tokenTimeout(), clock)
    expect(control.closed()).toBe(true)
    const refused = new BadRequest({ operation: "token", method: "POST", url: "https://auth.example/t", status: 400 })
    for (let i = 0; i < 5; i++) control.endedUnsent(Number.NEGATIVE_INFINITY, refused, clock)
    expect(control.closed()).toBe(true)
  })
})
