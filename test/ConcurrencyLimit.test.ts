/**
 * The adaptive concurrency limit's decisions (core/call/concurrencyLimit.ts), as pure
 * functions: each row of its table, and a client alone finding a service's capacity round trip by
 * round trip.
 */
import { describe, expect, it } from "vitest"
import * as ConcurrencyLimit from "../core/call/concurrencyLimit.js"
import * as Queueing from "../core/call/queueing.js"
import { runModel } from "../scripts/load/model.js"

const settings: ConcurrencyLimit.Settings = { min: 1, max: 64, backoffRatio: 0.7, increase: 0.03, slowStart: 0.5 }
const state = (limit: number, good: number, decreasedAt = 0): ConcurrencyLimit.State => ({ limit, good, decreasedAt })

describe("the concurrency limit, row by row", () => {
  it("starts at the initial limit, within min and max, in slow start; the gate lets floor(limit) out, at least 1", () => {
    expect(ConcurrencyLimit.initial(settings, 4)).toEqual({
      limit: 4,
      good: Number.POSITIVE_INFINITY,
      decreasedAt: Number.NEGATIVE_INFINITY
    })
    expect(ConcurrencyLimit.initial(settings, 100).limit).toBe(64)
    expect(ConcurrencyLimit.initial(settings, 0).limit).toBe(1)
    expect([0.2, 1, 1.99, 2, 7.5].map(ConcurrencyLimit.permits)).toEqual([1, 1, 1, 2, 7])
  })

  it("an answer while under half the limit is in flight leaves it as it is", () => {
    const idle = ConcurrencyLimit.initial(settings, 8)
    expect(ConcurrencyLimit.afterAnswer(settings, idle, 3)).toBe(8)
    expect(ConcurrencyLimit.afterAnswer(settings, state(8, 20), 3)).toBe(8)
    // Half in flight is in use.
    expect(ConcurrencyLimit.afterAnswer(settings, idle, 4)).toBe(8.5)
  })

  it("slow start: +slowStart per answer, so that the limit grows by half of itself in a round trip", () => {
    let current = ConcurrencyLimit.initial(settings, 4)
    for (let answer = 0; answer < 4; answer++) {
      current = { ...current, limit: ConcurrencyLimit.afterAnswer(settings, current, 4) }
    }
    expect(current.limit).toBe(6)
    const doubling = { ...settings, slowStart: 1 }
    expect(ConcurrencyLimit.afterAnswer(doubling, ConcurrencyLimit.initial(doubling, 4), 4)).toBe(5)
  })

  it("below good - 1: half the way back to it in a round trip, at least `increase`", () => {
    expect(ConcurrencyLimit.afterAnswer(settings, state(6, 11), 6)).toBeCloseTo(6 + 2 / 6)
    // Close to good - 1, the least step.
    expect(ConcurrencyLimit.afterAnswer(settings, state(9.99, 11), 9)).toBeCloseTo(9.99 + 0.03 / 9.99)
  })

  it("from good - 1 to good: `increase` in a round trip", () => {
    expect(ConcurrencyLimit.afterAnswer(settings, state(10, 11), 10)).toBeCloseTo(10 + 0.03 / 10)
    expect(ConcurrencyLimit.afterAnswer(settings, state(10.9, 11), 10)).toBeCloseTo(10.9 + 0.03 / 10.9)
  })

  it("past good, gently (latency the only signal): at most one more in a round trip", () => {
    expect(ConcurrencyLimit.afterAnswer(settings, state(15, 5), 15, true)).toBeCloseTo(15 + 1 / 15)
    expect(ConcurrencyLimit.afterAnswer(settings, state(7, 5), 7, true)).toBeCloseTo(7 + 0.5 / 7)
    // Below good, as ever: half the way back.
    expect(ConcurrencyLimit.afterAnswer(settings, state(6, 11), 6, true)).toBeCloseTo(6 + 2 / 6)
  })

  it("past good: a quarter of how far past in a round trip, at least `increase`", () => {
    expect(ConcurrencyLimit.afterAnswer(settings, state(11.04, 11), 11)).toBeCloseTo(11.04 + 0.03 / 11.04)
    expect(ConcurrencyLimit.afterAnswer(settings, state(15, 11), 15)).toBeCloseTo(15 + 1 / 15)
    // Less than 1 past it: a quarter of that already, above `increase`.
    expect(ConcurrencyLimit.afterAnswer(settings, state(11.8, 11), 11)).toBeCloseTo(11.8 + 0.2 / 11.8)
  })

  it("after an outage (the circuit closed): the good limit from before it, from where the outage left the limit", () => {
    // In slow start before the outage: slow start again, +0.5 an answer (times 1.5 a round trip).
    const recovered = ConcurrencyLimit.afterRecovery(state(1, 1.4, 500), Number.POSITIVE_INFINITY)
    expect(recovered).toEqual({ limit: 1, good: Number.POSITIVE_INFINITY, decreasedAt: 500 })
    let current = recovered
    for (let answer = 0; answer < 1 + 1 + 2 + 3; answer++) {
      current = {
        ...current,
        limit: ConcurrencyLimit.afterAnswer(settings, current, ConcurrencyLimit.permits(current.limit))
      }
    }
    expect(current.limit).toBe(4.5)
    // Having found 12 before: half the way back to 11 per round trip.
    expect(ConcurrencyLimit.afterRecovery(state(1, 1.4, 500), 12)).toEqual({ limit: 1, good: 12, decreasedAt: 500 })
    expect(ConcurrencyLimit.afterAnswer(settings, state(1, 12), 1)).toBeCloseTo(1 + 5)
    // Without it, from 1 below good: a few hundredths a round trip.
    expect(ConcurrencyLimit.afterAnswer(settings, state(1, 1.4), 1)).toBeCloseTo(1.03)
  })

  it("never above max, never below min", () => {
    expect(ConcurrencyLimit.afterAnswer(settings, ConcurrencyLimit.initial(settings, 64), 64)).toBe(64)
    expect(ConcurrencyLimit.afterAnswer(settings, state(63.99, 11), 64)).toBe(64)
    expect(ConcurrencyLimit.afterOverload(settings, state(1.2, 5), 10, 20).limit).toBe(1)
  })

  it("an overload sent at or after the last decrease: times backoffRatio, good is where it came, and when", () => {
    expect(ConcurrencyLimit.afterOverload(settings, ConcurrencyLimit.initial(settings, 20), 5, 7)).toEqual({
      limit: 14,
      good: 20,
      decreasedAt: 7
    })
    expect(ConcurrencyLimit.afterOverload(settings, state(10, 12, 7), 7, 9)).toEqual(state(7, 10, 9))
  })

  it("an overload of a request sent before the last decrease is the same overload: nothing changes", () => {
    const decreased = state(7, 10, 100)
    expect(ConcurrencyLimit.afterOverload(settings, decreased, 99, 150)).toBe(decreased)
  })
})

describe("a client alone, round trip by round trip", () => {
  /**
   * Each round trip, `permits(limit)` requests go out together; the service takes `capacity`,
   * refuses the rest (answered after the ones it took, within the same round trip).
   */
  const run = (capacity: number, roundTrips: number) => {
    let current = ConcurrencyLimit.initial(settings, ConcurrencyLimit.DEFAULTS.initial)
    let sent = 0
    let refused = 0
    const permitsSeen: Array<number> = []
    for (let trip = 1; trip <= roundTrips; trip++) {
      const out = ConcurrencyLimit.permits(current.limit)
      permitsSeen.push(out)
      const sentAt = trip * 10
      for (let request = 0; request < out; request++) {
        sent++
        if (request < capacity) {
          current = { ...current, limit: ConcurrencyLimit.afterAnswer(settings, current, out) }
        } else {
          refused++
          current = ConcurrencyLimit.afterOverload(settings, current, sentAt, sentAt + 5)
        }
      }
    }
    return { sent, refused, permitsSeen }
  }

  it("finds the capacity: over 90% of it used, under 2% of requests refused, never far past it", () => {
    for (const capacity of [2, 8, 30]) {
      const { permitsSeen, refused, sent } = run(capacity, 400)
      const settled = permitsSeen.slice(100)
      const used = settled.reduce((sum, permits) => sum + Math.min(permits, capacity), 0) / (capacity * settled.length)
      expect(used, `capacity ${capacity}`).toBeGreaterThan(0.9)
      expect(Math.max(...settled), `capacity ${capacity}`).toBeLessThanOrEqual(capacity + 1)
      expect(refused / sent, `capacity ${capacity}`).toBeLessThan(0.02)
    }
  })

  it("reaches a large capacity from the initial limit in a few round trips (slow start)", () => {
    const { permitsSeen } = run(60, 10)
    // Times 1.5 a round trip, not TCP's 2: see `slowStart`.
    expect(permitsSeen).toEqual([4, 6, 9, 13, 20, 30, 45, 64, 44, 51])
  })
})

describe("a batch in the load model (scripts/load/model.ts), against a service of 8 at once", () => {
  const model = (processes: number, limited: boolean, seed: number) =>
    runModel({
      processes,
      persons: 3000,
      capacity: 8,
      serviceMillis: 20,
      retryAfterMillis: undefined,
      max: 64,
      limit: limited ? ConcurrencyLimit.DEFAULTS : undefined,
      latency: Queueing.DEFAULTS,
      maxRetries: 3,
      overloadRetriedAtOnce: false,
      seed
    })
  const seeds = [1, 2, 3, 4, 5, 6, 7, 8]

  it("one process and four: no person failed, under 5% of requests refused, where a fixed cap of 64 fails many", () => {
    for (const processes of [1, 4]) {
      expect(model(processes, false, 1).failedPersons, `${processes}`).toBeGreaterThan(10)
      const runs = seeds.map((seed) => model(processes, true, seed))
      for (const limited of runs) {
        expect(limited.failedPersons, `${processes}`).toBe(0)
        expect(limited.tooMany / limited.requests, `${processes}`).toBeLessThan(0.05)
        expect(limited.peakInFlight, `${processes}`).toBeLessThanOrEqual(4 * processes + 8)
      }
      // The time a run takes past the ideal is mostly its last persons' (a late 429 waits for its
      // backoff): 1.06-1.11x the ideal with one process (mean 1.09), 1.07-1.54x with four (mean 1.25).
      const wall = runs.reduce((sum, run) => sum + run.wallMillis / run.idealMillis, 0) / runs.length
      expect(wall, `${processes}`).toBeLessThan(1.3)
    }
  })
})
