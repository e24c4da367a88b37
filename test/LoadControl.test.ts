/**
 * The retry budget's and the circuit breaker's decisions (src/internal/call/retryBudget.ts,
 * src/internal/call/circuitBreaker.ts), as pure functions, row by row of their tables.
 */
import { describe, expect, it } from "vitest"
import * as CircuitBreaker from "../src/internal/call/circuitBreaker.js"
import * as RetryBudget from "../src/internal/call/retryBudget.js"

describe("the retry budget", () => {
  const settings: RetryBudget.Settings = { ratio: 0.5, perSecond: 10, cap: 20 }

  it("time adds perSecond a second, up to the cap; no time, nothing", () => {
    expect(RetryBudget.balanceAt(settings, 3, 1000, 1500)).toBe(8)
    expect(RetryBudget.balanceAt(settings, 3, 1000, 1000)).toBe(3)
    // A clock that went back adds nothing.
    expect(RetryBudget.balanceAt(settings, 3, 1000, 900)).toBe(3)
    expect(RetryBudget.balanceAt(settings, 15, 0, 10_000)).toBe(20)
  })

  it("a first attempt adds ratio, up to the cap", () => {
    expect(RetryBudget.afterFirstAttempt(settings, 3)).toBe(3.5)
    expect(RetryBudget.afterFirstAttempt(settings, 19.8)).toBe(20)
  })

  it("a retry takes 1 when there is 1; with less it is refused", () => {
    expect(RetryBudget.afterRetry(1)).toBe(0)
    expect(RetryBudget.afterRetry(2.5)).toBe(1.5)
    expect(RetryBudget.afterRetry(0.99)).toBeUndefined()
  })

  it("when every call fails, retries stay near ratio of the first attempts, not the retries each call may take", () => {
    // 1,000 calls in one second, each failing and asking for up to 3 retries.
    let balance = settings.cap
    let retries = 0
    for (let call = 0; call < 1000; call++) {
      const now = call
      balance = RetryBudget.afterFirstAttempt(settings, RetryBudget.balanceAt(settings, balance, now - 1, now))
      for (let retry = 0; retry < 3; retry++) {
        const after = RetryBudget.afterRetry(balance)
        if (after === undefined) break
        balance = after
        retries++
      }
    }
    // ratio x 1,000, the cap, and 10 a second for the one second.
    expect(retries).toBeGreaterThanOrEqual(500)
    expect(retries).toBeLessThanOrEqual(500 + 20 + 10)
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

  it("at its time, one call goes as the probe; the others are refused while it runs", () => {
    const open: CircuitBreaker.State = { _tag: "Open", until: 510, cooldownMillis: 500 }
    const probing = CircuitBreaker.admit(settings, open, 510)
    expect(probing).toEqual({ _tag: "Go", state: { _tag: "HalfOpen", cooldownMillis: 500, since: 510 } })
    const halfOpen = (probing as { state: CircuitBreaker.State }).state
    expect(CircuitBreaker.admit(settings, halfOpen, 520)).toEqual({ _tag: "Refused", retryAt: 1020 })
  })

  it("half-open: a probe never heard of (interrupted, never sent) is given up after probeTimeoutMillis: another call probes", () => {
    const halfOpen: CircuitBreaker.State = { _tag: "HalfOpen", cooldownMillis: 500, since: 510 }
    // Refused until the probe is given up, never past that.
    expect(CircuitBreaker.admit(settings, halfOpen, 10_200)).toEqual({ _tag: "Refused", retryAt: 10_510 })
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
