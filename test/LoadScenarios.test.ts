/**
 * The load-control scenarios of issues 25 and 37 on loopback, smaller than `npm run load:scenarios`
 * runs them (1,200 persons, 3 s outages, a slowdown to 1 s over 3 s): a service of fixed capacity
 * (K = 8 at once, 20 ms each, 429 beyond, or a line) in a process of its own, the batch in another,
 * through the default undici transport with default settings. What they assert is what the
 * service saw and what became of the persons, never the time taken (that is the benchmark's,
 * docs/benchmarks.md).
 */
import { describe, expect, it } from "@effect/vitest"
import * as CircuitBreaker from "../core/call/circuitBreaker.js"
import { K, run, type Scale, scenarios } from "../scripts/load/scenarios.js"

// Enough persons that the batch still runs when the outage (from 2 s in) ends.
const SMALL: Scale = { persons: 1200, outageMillis: 3000, slowMillis: 3000, slowLatencyMillis: 1000 }
const byNumber = new Map(scenarios(SMALL).map((scenario) => [scenario.name.split(" ")[0]!, scenario]))
const scenario = (number: string) => byNumber.get(number)!

/**
 * "Back within 3 s" is the benchmark's figure (0.7-0.8 s quiet, docs/benchmarks.md); a test run
 * beside the whole suite saw 3.5 s once. What the test holds is the mechanism: the breaker's
 * recheck finds the service within its longest cool-down (2 s), and the batch is then back at its
 * own pace (half what it reached before the outage, whatever the machine's load) within as long
 * again. A breaker left open, or a concurrency limit stuck low, fails it at any load.
 */
const BACK_WITHIN_MILLIS = 2 * CircuitBreaker.DEFAULTS.maxCooldownMillis

describe("load scenarios on loopback", { timeout: 120_000 }, () => {
  it("1: one process against a service that takes 8 at once: no person failed, 429s at most 5% of requests", async () => {
    const figures = await run(scenario("1"))
    expect(figures.failedPersons).toBe(0)
    expect(figures.throttledShare).toBeLessThanOrEqual(0.05)
    expect(figures.peakInFlight).toBeLessThanOrEqual(K)
  })

  it("2: four processes at once: no person failed, 429s at most 8% of requests (5% at the benchmark's 3,000)", async () => {
    const figures = await run(scenario("2"))
    expect(figures.failedPersons).toBe(0)
    // The four processes' first requests (4 each against K = 8) weigh more in a small batch.
    expect(figures.throttledShare).toBeLessThanOrEqual(0.08)
  })

  it("3: 503 to everything for 3 s: no person failed; after its first 2 s at most 5 requests a second; back at its pace after", async () => {
    const figures = await run(scenario("3"))
    expect(figures.failedPersons).toBe(0)
    expect(figures.deadRatePerProcess).toBeLessThanOrEqual(5)
    // The figures in the message: a run too loaded to have a pace before the outage shows it.
    expect(figures.recoveryToOwnPaceMillis, JSON.stringify(figures)).toBeLessThanOrEqual(BACK_WITHIN_MILLIS)
  })

  it("3b: the port refusing connections for 3 s: the same, counted as connection attempts", async () => {
    const figures = await run(scenario("3b"))
    expect(figures.failedPersons).toBe(0)
    // The service counts nothing while its port is closed: the clients count their connection attempts.
    expect(figures.connectRatePerProcess).toBeLessThanOrEqual(5)
    // The figures in the message: a run too loaded to have a pace before the outage shows it.
    expect(figures.recoveryToOwnPaceMillis, JSON.stringify(figures)).toBeLessThanOrEqual(BACK_WITHIN_MILLIS)
  })

  it("4: answers taking 1 s instead of 20 ms for 3 s: never more than 2K in flight, at most 1.5 requests a person", async () => {
    const figures = await run(scenario("4"))
    expect(figures.failedPersons).toBe(0)
    expect(figures.peakInFlightInWindow).toBeLessThanOrEqual(2 * K)
    expect(figures.requestsPerPerson).toBeLessThanOrEqual(1.5)
  })

  it("5: 30% of requests failing with 500 at random: at most two persons failed (chance), at most 1.6 requests a person", async () => {
    const figures = await run(scenario("5"))
    // A person fails when all eight of its attempts (four, then four more as a new call) draw a
    // 500: 0.3^8, about 1 in 15,000. Of 1,200 persons none fails in 92% of runs, and at most two
    // in all but 1 run of 13,000: "none" would fail one run in thirteen (it did at the benchmark's 3,000).
    expect(figures.failedPersons).toBeLessThanOrEqual(2)
    expect(figures.requestsPerPerson).toBeLessThanOrEqual(1.6)
  })

  // Before issue 37's fix, every person of these two failed (12 s into a 15 s outage, the service
  // getting 11-13 requests a second), and 64 requests stayed open at a service serving 8 in the third.
  it("6: 503 to everything from the start for 3 s: no person failed; after its first 2 s at most 5 requests a second", async () => {
    const figures = await run(scenario("6"))
    expect(figures.failedPersons).toBe(0)
    expect(figures.deadRatePerProcess).toBeLessThanOrEqual(5)
  })

  it("6b: the port closed from the start for 3 s: the same, counted as connection attempts", async () => {
    const figures = await run(scenario("6b"))
    expect(figures.failedPersons).toBe(0)
    expect(figures.connectRatePerProcess).toBeLessThanOrEqual(5)
  })

  it("7: answers slowing from 20 ms to 1 s over 3 s, excess requests waiting in line: never more than 2K open at the service", async () => {
    const figures = await run(scenario("7"))
    expect(figures.failedPersons).toBe(0)
    expect(figures.peakInFlightInWindow).toBeLessThanOrEqual(2 * K)
  })
})
