/**
 * The concurrency limit's latency signal (issue 37; core/call/queueing.ts): its decisions row
 * by row, a client's load control fed round trips by a service with a line (no fibers, a clock the
 * test sets), and a batch in the load model against a service whose excess requests wait, slowing
 * from 20 ms to 2 s. Before, nothing but 429, 503 and timeouts brought the limit down: 64 requests
 * stayed open at a service that serves 8.
 */
import type { Clock } from "effect"
import { describe, expect, it } from "vitest"
import * as ConcurrencyLimit from "../core/call/concurrencyLimit.js"
import * as Queueing from "../core/call/queueing.js"
import { degrading, runModel } from "../scripts/load/model.js"
import * as Gate from "../src/internal/call/gate.js"
import { LoadControl, Signal } from "../src/internal/call/loadControl.js"

// 30 ms is 1.5 x a base of 20.
const settings = Queueing.DEFAULTS
const fastest = (millis: number, inFlight = 8): Queueing.Fastest => ({ millis, inFlight })
const limits: ConcurrencyLimit.Settings = { ...ConcurrencyLimit.DEFAULTS, max: 64 }

describe("the latency signal's settings (chosen on the load model, scripts/load/model.ts)", () => {
  it("tolerance 1.5, rounds of 4 answers at least, base checked every 100 rounds, quiet for 100 after a 429", () => {
    expect(Queueing.DEFAULTS).toEqual({
      tolerance: 1.5,
      minRound: 4,
      checkEvery: 100,
      refusedRounds: 100,
      leastWaitMillis: 1
    })
  })
})

describe("what a round's fastest answer says, row by row", () => {
  it("at most tolerance x base: clear; more, two rounds in a row: requests waited at the service; once: nothing yet", () => {
    for (const lastOver of [false, true]) {
      expect(Queueing.verdict(settings, 20, fastest(30), undefined, lastOver)).toBe(Queueing.Verdict.Clear)
    }
    expect(Queueing.verdict(settings, 20, fastest(30.1), undefined, true)).toBe(Queueing.Verdict.Queue)
    expect(Queueing.verdict(settings, 20, fastest(30.1), undefined, false)).toBe(Queueing.Verdict.Once)
    // A service answering within a millisecond: a millisecond more is noise, however many times
    // base it is (a base of 0, as a round trip timed in whole ms made it, cut every round after).
    for (const [base, millis] of [[0, 1], [0.3, 1.3], [0.02, 0.9]] as const) {
      expect(Queueing.verdict(settings, base, fastest(millis), undefined, true), `${base} -> ${millis}`).toBe(
        Queueing.Verdict.Clear
      )
    }
    expect(Queueing.verdict(settings, 0.3, fastest(1.31), undefined, true)).toBe(Queueing.Verdict.Queue)
    // Before the first answer, base is unknown: anything is clear.
    expect(Queueing.verdict(settings, Number.POSITIVE_INFINITY, fastest(5000), undefined, true)).toBe(
      Queueing.Verdict.Clear
    )
  })

  it("after a cut for latency: slower, when the fastest answer went with at most 0.8 as many out and kept over half of what a line would lose", () => {
    const cut = fastest(100, 10)
    const after = (millis: number, inFlight: number) =>
      Queueing.verdict(settings, 20, fastest(millis, inFlight), cut, false)
    // 7 out instead of 10: a line would answer in 70 ms; the midpoint is 85.
    expect(after(85, 7)).toBe(Queueing.Verdict.Slower)
    expect(after(120, 7)).toBe(Queueing.Verdict.Slower)
    expect(after(84.9, 7)).toBe(Queueing.Verdict.Queue)
    expect(after(70, 7)).toBe(Queueing.Verdict.Queue)
    // 8 of 10 out: the line a fifth shorter, the midpoint 90.
    expect(after(90, 8)).toBe(Queueing.Verdict.Slower)
    expect(after(89.9, 8)).toBe(Queueing.Verdict.Queue)
    // More than 0.8 as many out, or more: the cut says nothing within a round's noise; still long, so still a line.
    expect(after(120, 9)).toBe(Queueing.Verdict.Queue)
    expect(after(100, 10)).toBe(Queueing.Verdict.Queue)
    expect(after(150, 12)).toBe(Queueing.Verdict.Queue)
    // Short again: clear, whatever the cut.
    expect(after(25, 7)).toBe(Queueing.Verdict.Clear)
  })

  it("a request that went alone waited behind none of this client's: slower, however long it took", () => {
    expect(Queueing.verdict(settings, 20, fastest(200, 1), undefined, true)).toBe(Queueing.Verdict.Slower)
    expect(Queueing.verdict(settings, 20, fastest(200, 1), fastest(100, 1), false)).toBe(Queueing.Verdict.Slower)
    expect(Queueing.verdict(settings, 20, fastest(200, 2), undefined, true)).toBe(Queueing.Verdict.Queue)
  })

  it("base: the least seen; a slower service's round sets it", () => {
    expect(Queueing.baseAfter(Queueing.Verdict.Clear, 20, fastest(18))).toBe(18)
    expect(Queueing.baseAfter(Queueing.Verdict.Clear, 20, fastest(25))).toBe(20)
    expect(Queueing.baseAfter(Queueing.Verdict.Queue, 20, fastest(60))).toBe(20)
    expect(Queueing.baseAfter(Queueing.Verdict.Once, 20, fastest(60))).toBe(20)
    expect(Queueing.baseAfter(Queueing.Verdict.Slower, 20, fastest(90))).toBe(90)
  })

  it("a cut keeps tolerance x base / fastest of the limit, at least half, at most backoffRatio", () => {
    expect(Queueing.cutRatio(settings, 20, 50, 0.7)).toBeCloseTo(0.6)
    expect(Queueing.cutRatio(settings, 20, 200, 0.7)).toBe(Queueing.LEAST_CUT)
    expect(Queueing.cutRatio(settings, 20, 31, 0.7)).toBe(0.7)
  })

  it("a round is as many answers as the limit lets out, at least minRound", () => {
    expect(Queueing.roundSize(settings, 1)).toBe(4)
    expect(Queueing.roundSize(settings, 4)).toBe(4)
    expect(Queueing.roundSize(settings, 13)).toBe(13)
  })

  it("base is checked every checkEvery rounds, or at once once it fell below (1 + tolerance) / 2 of where it was checked", () => {
    expect(Queueing.checkDue(settings, 99, 20, 20)).toBe(false)
    expect(Queueing.checkDue(settings, 100, 20, 20)).toBe(true)
    // 1.25 x 1600 = 2000.
    expect(Queueing.checkDue(settings, 1, 2000, 1600)).toBe(false)
    expect(Queueing.checkDue(settings, 1, 2000, 1599)).toBe(true)
  })

  it("the limit: a cut by a ratio, and a cut undone", () => {
    const state = { limit: 20, good: 30, decreasedAt: 5 }
    expect(ConcurrencyLimit.afterOverload(limits, state, 6, 9, 0.5)).toEqual({ limit: 10, good: 20, decreasedAt: 9 })
    expect(ConcurrencyLimit.undone({ limit: 10, good: 20, decreasedAt: 9 }, state)).toEqual({
      limit: 20,
      good: 30,
      decreasedAt: 9
    })
    // Grown past where it was since: kept.
    expect(ConcurrencyLimit.undone({ limit: 25, good: 20, decreasedAt: 9 }, state).limit).toBe(25)
  })
})

describe("the end of a round, state by state", () => {
  const limit: ConcurrencyLimit.State = { limit: 12, good: 14, decreasedAt: 100 }
  const known: Queueing.State = { ...Queueing.initial, base: 20, checked: 20, rounds: 3 }
  const round = (
    state: Queueing.State,
    millis: number,
    inFlight = 12,
    at: ConcurrencyLimit.State = limit,
    sent = 500
  ) => Queueing.afterRound(settings, limits, state, at, fastest(millis, inFlight), sent)

  it("starts with nothing known", () => {
    expect(Queueing.initial).toEqual({
      base: Number.POSITIVE_INFINITY,
      checked: Number.POSITIVE_INFINITY,
      rounds: 0,
      recentOver: 0,
      cut: undefined,
      checking: undefined,
      refusing: 0
    })
  })

  it("clear: base the least seen, one more round, the limit as it is", () => {
    const after = round(known, 18)
    expect(after.limit).toBe(limit)
    expect(after.state).toEqual({ ...known, base: 18, rounds: 4, recentOver: 0 })
  })

  it("over once: nothing but that it was; twice: cut by the gradient, the cut kept to be judged", () => {
    const once = round(known, 40)
    expect(once.limit).toBe(limit)
    expect(once.state).toEqual({ ...known, recentOver: 1 })
    // Over in two of the last three rounds.
    const afterClear = round({ ...once.state, recentOver: 0b10 }, 40)
    expect(afterClear.state.cut).toBeDefined()
    // 1.5 x 20 / 50 = 0.6 of the limit (at most backoffRatio, 0.7; at least half). Where it returns
    // to (good) stays: one line's two rounds may be the client's own delays.
    const twice = round(once.state, 50)
    expect(twice.limit).toEqual({ limit: 12 * 0.6, good: 14, decreasedAt: 501 })
    expect(twice.state).toEqual({
      ...known,
      rounds: 0,
      recentOver: 0b11,
      cut: { millis: 50, inFlight: 12, before: limit }
    })
  })

  it("a line still there after a cut: cut again, and good is the limit it came at; in slow start the first cut sets it", () => {
    const cut = round(round(known, 50).state, 50)
    // Fewer out and faster by about as much: a line.
    const again = round(cut.state, 35, 7, cut.limit, 520)
    expect(again.limit.limit).toBeCloseTo(5.04)
    expect(again.limit.good).toBe(cut.limit.limit)
    expect(again.limit.decreasedAt).toBe(521)
    const slowStart = { ...limit, good: Number.POSITIVE_INFINITY }
    expect(round(round(known, 50, 12, slowStart).state, 50, 12, slowStart).limit).toEqual({
      limit: 12 * 0.6,
      good: 12,
      decreasedAt: 501
    })
  })

  it("in slow start the first round over the tolerance cuts at once, and sets good: a second came after the limit had passed twice the capacity", () => {
    const slowStart = { ...limit, good: Number.POSITIVE_INFINITY }
    const first = round(known, 50, 12, slowStart)
    expect(first.limit).toEqual({ limit: 12 * 0.6, good: 12, decreasedAt: 501 })
    expect(first.state.cut).toEqual({ millis: 50, inFlight: 12, before: slowStart })
    // Past slow start, one round over is still nothing but that it was.
    expect(round(known, 50).limit).toBe(limit)
  })

  it("after a cut: slower gives the limit back and takes the round's time as base; clear keeps the cut", () => {
    const cut = round(round(known, 40).state, 40)
    const slower = round(cut.state, 39, 9, cut.limit)
    expect(slower.limit).toEqual({ ...limit, decreasedAt: 501 })
    expect(slower.state).toEqual({ ...known, base: 39, checked: 39, rounds: 0, recentOver: 0b11, cut: undefined })
    const clear = round(cut.state, 21, 9, cut.limit)
    expect(clear.limit).toBe(cut.limit)
    expect(clear.state.cut).toBeUndefined()
  })

  it("over with one request out: base this round's, the limit as it is (after a cut, the cut undone)", () => {
    const alone = round({ ...known, recentOver: 1 }, 90, 1)
    expect(alone.limit).toBe(limit)
    expect(alone.state).toEqual({ ...known, base: 90, checked: 90, recentOver: 0b11 })
  })

  it("a check: due, the limit halved for a round (and later requests only counted); then given back, base the least", () => {
    const due = round({ ...known, rounds: 99 }, 19)
    expect(due.limit).toEqual({ limit: 6, good: 14, decreasedAt: 501 })
    expect(due.state).toEqual({ ...known, base: 19, rounds: 0, checking: limit })
    const checked = round(due.state, 12, 6, due.limit)
    expect(checked.limit).toEqual({ ...limit, decreasedAt: 501 })
    expect(checked.state).toEqual({ ...known, base: 12, checked: 12, rounds: 0 })
    // In slow start there is nothing to check yet.
    const slowStart = { ...limit, good: Number.POSITIVE_INFINITY }
    expect(round({ ...known, rounds: 99 }, 19, 12, slowStart).limit).toBe(slowStart)
  })

  it("after a 429, rounds only keep base up to date, for refusedRounds of them", () => {
    const refusing = Queueing.afterOverload(settings, known, false, true)
    expect(refusing).toEqual({ ...known, refusing: 100 })
    const after = round(refusing, 200)
    expect(after.limit).toBe(limit)
    expect(after.state).toEqual({ ...known, refusing: 99 })
    expect(round(refusing, 15).state.base).toBe(15)
  })

  it("another decrease (a 429, a 503) drops a cut or a check under way; none leaves the state as it is", () => {
    const busy = { ...known, cut: { ...fastest(40), before: limit }, checking: limit }
    expect(Queueing.afterOverload(settings, busy, true, false)).toEqual({ ...known })
    expect(Queueing.afterOverload(settings, busy, false, false)).toBe(busy)
  })
})

/**
 * A client's load control against a service that serves `capacity` at once in `serviceMillis`
 * (what `serviceAt` says at each round trip) and makes the rest wait in line: every request of a
 * round trip goes with the limit's requests out, and takes `serviceMillis` x max(1, out /
 * capacity). Returns the requests out, round trip by round trip.
 */
const againstALine = (capacity: number, roundTrips: number, serviceAt: (trip: number) => number) => {
  let millis = 0
  const clock = {
    unsafeCurrentTimeNanos: () => BigInt(Math.round(millis * 1_000_000)),
    unsafeCurrentTimeMillis: () => millis
  } as unknown as Clock.Clock
  const gate = Gate.make(64)
  let permits = 0
  const control = new LoadControl(
    {
      limit: { ...ConcurrencyLimit.DEFAULTS, max: 64 },
      latency: Queueing.DEFAULTS,
      initialLimit: ConcurrencyLimit.DEFAULTS.initial,
      budget: undefined,
      breaker: undefined
    },
    gate,
    (size) => (permits = size)
  )
  const out: Array<number> = []
  for (let trip = 0; trip < roundTrips; trip++) {
    const n = permits
    out.push(n)
    // The batch keeps the gate full: each request goes with the limit's requests out.
    for (let i = 0; i < n; i++) gate.take(() => {})
    const sent = Array.from({ length: n }, () => ({
      number: control.sending(true, millis),
      at: millis,
      inFlight: control.inFlight()
    }))
    const took = serviceAt(trip) * Math.max(1, n / capacity)
    millis += took
    for (const request of sent) {
      control.ended(request.number, Number.NEGATIVE_INFINITY, Signal.Answer, clock, request.at, request.inFlight)
      gate.leave()
    }
  }
  return out
}

describe("a client's limit against a service whose excess requests wait in line", () => {
  it("settles between its capacity and twice it, where before it grew to the ceiling", () => {
    for (const capacity of [4, 8, 20]) {
      const out = againstALine(capacity, 300, () => 50)
      const settled = out.slice(50)
      expect(Math.max(...settled), `capacity ${capacity}`).toBeLessThanOrEqual(2 * capacity)
      const served = settled.reduce((sum, n) => sum + Math.min(n, capacity), 0) / (capacity * settled.length)
      expect(served, `capacity ${capacity}`).toBeGreaterThan(0.85)
    }
  })

  it("a service slowing down by itself (10% a round trip) is not taken for a line: the limit keeps its capacity", () => {
    const out = againstALine(8, 60, (trip) => 20 * 1.1 ** trip)
    expect(Math.min(...out.slice(10)), `${out}`).toBeGreaterThanOrEqual(5)
    expect(Math.max(...out)).toBeLessThanOrEqual(16)
  })

  it("a service 100 times faster at once: its requests soon stop waiting (base checked at once)", () => {
    const out = againstALine(8, 120, (trip) => (trip < 60 ? 2000 : 20))
    expect(Math.max(...out.slice(70)), `${out.slice(60)}`).toBeLessThanOrEqual(16)
  })
})

describe("a batch in the load model against a service of 8 at once whose excess requests wait", () => {
  // Its service time grows from 20 ms to 2 s over 20 s, stays 10 s, then is 20 ms again.
  const model = (latency: Queueing.Settings | undefined, seed: number) =>
    runModel({
      processes: 1,
      persons: 3000,
      capacity: 8,
      serviceMillis: 20,
      retryAfterMillis: undefined,
      max: 64,
      limit: ConcurrencyLimit.DEFAULTS,
      latency,
      maxRetries: 3,
      overloadRetriedAtOnce: false,
      seed,
      queueExcess: true,
      serviceMillisAt: degrading(20_000, 2000),
      deadlineMillis: 60_000,
      requestTimeoutMillis: 30_000,
      window: { from: 0, to: 30_000 }
    })

  it("keeps at most twice its capacity at the service while it slows, no person failing, as fast as without it", () => {
    for (const seed of [1, 2, 3, 4]) {
      const before = model(undefined, seed)
      const after = model(Queueing.DEFAULTS, seed)
      expect(before.peakInFlightInWindow).toBe(64)
      expect(after.peakInFlightInWindow, `seed ${seed}`).toBeLessThanOrEqual(16)
      // When it is 100 times faster at once, a few round trips pass before the line shows (13-17).
      expect(after.peakInFlight, `seed ${seed}`).toBeLessThanOrEqual(24)
      expect(after.failedPersons).toBe(0)
      expect(after.wallMillis / before.wallMillis, `seed ${seed}`).toBeLessThan(1.05)
    }
  })
})
