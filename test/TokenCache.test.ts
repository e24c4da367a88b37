/**
 * The token cache's pure core: every rule as a table, and a model test that drives random
 * sequences of time steps, gets, refresh outcomes and invalidations and checks the invariants
 * after every step. No fibers, no clock.
 */
import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { ClinicalError } from "effect-clinical"
import * as TokenCache from "../core/token/tokenCache.js"
import { fromCore } from "../src/internal/fromCore.js"

type State = TokenCache.State<string, string>

const windows: TokenCache.Windows = { softWindowMillis: 300_000, hardWindowMillis: 30_000 }
const HOUR = 3_600_000

/** A cached token "t<generation>" sent at `sentAt` with `lifetime`. */
const cached = (generation: number, sentAt = 0, lifetime = HOUR): TokenCache.Cached<string> => ({
  token: `t${generation}`,
  generation,
  ...TokenCache.windowsOf(windows, sentAt, lifetime)
})

const rateLimited = (retryAfterMillis?: number) =>
  new ClinicalError.RateLimited({
    operation: "token",
    status: 429,
    ...(retryAfterMillis === undefined ? {} : { retryAfterMillis })
  })
const serverError = (status: number, retryAfterMillis?: number) =>
  new ClinicalError.ServerError({
    operation: "token",
    status,
    ...(retryAfterMillis === undefined ? {} : { retryAfterMillis })
  })

const one = cached(1)
const valid: State = { _tag: "Cached", generation: 1, cached: one, background: "ready" }
const gaveUp: State = { ...valid, background: "gaveUp" }
const refreshingWith: State = { _tag: "Refreshing", generation: 1, cached: one, refresh: "r", reason: "soft-window" }
const refreshingEmpty: State = { _tag: "Refreshing", generation: 0, cached: undefined, refresh: "r", reason: "empty" }
const throttledWith = (until: number): State => ({
  _tag: "Throttled",
  generation: 1,
  cached: one,
  until,
  error: rateLimited(until)
})
const throttledEmpty = (until: number): State => ({
  _tag: "Throttled",
  generation: 0,
  cached: undefined,
  until,
  error: rateLimited(until)
})

// With a one-hour token: soft window from 55 min, hard window from 59 min 30 s, expiry at 60 min.
const SOFT = one.softAt
const HARD = one.hardAt
const EXPIRY = one.expiresAt

describe("windowsOf", () => {
  it("soft = min(soft window, lifetime / 2), hard = min(hard window, lifetime / 10), counted back from expiry", () => {
    expect(TokenCache.windowsOf(windows, 1_000, HOUR)).toEqual({
      expiresAt: 1_000 + HOUR,
      softAt: 1_000 + HOUR - 300_000,
      hardAt: 1_000 + HOUR - 30_000
    })
    // A 60-second token: half and a tenth of its lifetime.
    expect(TokenCache.windowsOf(windows, 0, 60_000)).toEqual({ expiresAt: 60_000, softAt: 30_000, hardAt: 54_000 })
    // At the cross-over of the hard window: 30 s is exactly a tenth of 300 s.
    expect(TokenCache.windowsOf(windows, 0, 300_000).hardAt).toBe(270_000)
    expect(TokenCache.windowsOf(windows, 0, 299_000).hardAt).toBe(299_000 - 29_900)
    expect(TokenCache.windowsOf(windows, 0, 301_000).hardAt).toBe(301_000 - 30_000)
  })
})

describe("decide", () => {
  const table: ReadonlyArray<readonly [string, State, number, TokenCache.Decision<string, string>]> = [
    ["no token", TokenCache.empty, 0, { _tag: "RefreshAndAwait", reason: "empty" }],
    ["a token before its soft window", valid, SOFT - 1, { _tag: "Serve", token: "t1" }],
    ["a token at its soft window", valid, SOFT, { _tag: "ServeAndRefresh", token: "t1" }],
    ["a token just before its hard window", valid, HARD - 1, { _tag: "ServeAndRefresh", token: "t1" }],
    ["a token in the soft window whose background refresh gave up", gaveUp, SOFT, { _tag: "Serve", token: "t1" }],
    ["a token in the soft window with a refresh in flight", refreshingWith, SOFT, { _tag: "Serve", token: "t1" }],
    ["a token in the soft window while throttled", throttledWith(HARD + 10), SOFT, { _tag: "Serve", token: "t1" }],
    ["a token in the soft window after a pause ended", throttledWith(SOFT), SOFT + 1, { _tag: "Serve", token: "t1" }],
    ["a token at its hard window", valid, HARD, { _tag: "RefreshAndAwait", reason: "hard-window" }],
    ["a token whose background refresh gave up, at the hard window", gaveUp, HARD, {
      _tag: "RefreshAndAwait",
      reason: "hard-window"
    }],
    ["a token just before expiry", valid, EXPIRY - 1, { _tag: "RefreshAndAwait", reason: "hard-window" }],
    ["a token at expiry", valid, EXPIRY, { _tag: "RefreshAndAwait", reason: "expired" }],
    ["a token at its hard window with a refresh in flight", refreshingWith, HARD, { _tag: "Await", refresh: "r" }],
    ["no token with a refresh in flight", refreshingEmpty, 0, { _tag: "Await", refresh: "r" }],
    ["no token after a pause ended", throttledEmpty(100), 100, { _tag: "RefreshAndAwait", reason: "empty" }],
    ["a token at its hard window after a pause ended", throttledWith(HARD), HARD, {
      _tag: "RefreshAndAwait",
      reason: "hard-window"
    }]
  ]
  for (const [title, state, now, decision] of table) {
    it(`${title}: ${decision._tag}`, () => expect(TokenCache.decide(state, now)).toEqual(decision))
  }

  it("while a pause runs, callers who need a new token fail fast with the endpoint's error, counting down", () => {
    expect(TokenCache.decide(throttledEmpty(5_000), 1_000)).toEqual({
      _tag: "FailFast",
      error: rateLimited(5_000),
      retryAfterMillis: 4_000
    })
    const fromServer: State = {
      _tag: "Throttled",
      generation: 1,
      cached: one,
      until: HARD + 3_000,
      error: serverError(503, 9_000)
    }
    expect(TokenCache.decide(fromServer, HARD)).toEqual({
      _tag: "FailFast",
      error: serverError(503, 9_000),
      retryAfterMillis: 3_000
    })
  })

  it("the error a caller fails fast with says where the endpoint is, as the endpoint's own did, counted down", () => {
    const at = { method: "POST", url: "https://auth.example.test/api/Server/Token" }
    const error = new ClinicalError.RateLimited({ operation: "token", ...at, status: 429, retryAfterMillis: 9_000 })
    // The core's decision as data; the line's class of it (what the caller fails with).
    const throttled = (
      error: ClinicalError.RateLimited | ClinicalError.ServerError,
      millis: number
    ) => fromCore(TokenCache.withRetryAfter(error, millis))
    expect(throttled(error, 4_000)).toEqual(
      new ClinicalError.RateLimited({ operation: "token", ...at, status: 429, retryAfterMillis: 4_000 })
    )
    expect(throttled(serverError(503, 9_000), 3_000)).toEqual(serverError(503, 3_000))
    expect(throttled(serverError(503, 9_000), 3_000)).toBeInstanceOf(ClinicalError.ServerError)
    expect(throttled(rateLimited(9_000), 3_000)).toBeInstanceOf(ClinicalError.RateLimited)
  })

  it("fresh is decide's first rule, without the lock", () => {
    expect(TokenCache.fresh(valid, SOFT - 1)).toBe("t1")
    expect(TokenCache.fresh(valid, SOFT)).toBeUndefined()
    expect(TokenCache.fresh(TokenCache.empty, 0)).toBeUndefined()
    expect(TokenCache.fresh(throttledWith(SOFT), 0)).toBe("t1")
  })
})

describe("transitions", () => {
  it("started records the refresh and keeps the token for whoever may still use it", () => {
    expect(TokenCache.started(valid, "r2", "soft-window")).toEqual({
      _tag: "Refreshing",
      generation: 1,
      cached: one,
      refresh: "r2",
      reason: "soft-window"
    })
    expect(TokenCache.started(TokenCache.empty, "r", "empty")).toEqual(refreshingEmpty)
  })

  it("succeeded numbers the new token, caches it and resets the background status and any pause", () => {
    for (const from of [refreshingWith, refreshingEmpty, throttledWith(10), gaveUp]) {
      const next = TokenCache.succeeded(from, (generation) => cached(generation, 1_000))
      expect(next).toEqual({
        _tag: "Cached",
        generation: from.generation + 1,
        cached: cached(from.generation + 1, 1_000),
        background: "ready"
      })
    }
  })

  it("failed never caches the failure: only a pause, and a background refresh's giving up", () => {
    expect(TokenCache.failed(refreshingEmpty, "empty", undefined)).toEqual(TokenCache.empty)
    expect(TokenCache.failed(refreshingWith, "soft-window", undefined)).toEqual(gaveUp)
    expect(TokenCache.failed({ ...refreshingWith, reason: "hard-window" }, "hard-window", undefined)).toEqual(valid)
    const throttle = { until: 9_000, error: rateLimited(5_000) }
    expect(TokenCache.failed(refreshingWith, "soft-window", throttle)).toEqual({
      _tag: "Throttled",
      generation: 1,
      cached: one,
      ...throttle
    })
  })

  it("invalidated drops the token only if it is still the cached one, with its background status", () => {
    expect(TokenCache.invalidated(gaveUp, 1)).toEqual({ _tag: "Empty", generation: 1 })
    expect(TokenCache.invalidated(refreshingWith, 1)).toEqual({ ...refreshingWith, cached: undefined })
    expect(TokenCache.invalidated(throttledWith(5), 1)).toEqual({ ...throttledWith(5), cached: undefined })
    for (const state of [valid, refreshingWith, throttledWith(5), TokenCache.empty]) {
      expect(TokenCache.invalidated(state, 0)).toBe(state)
      expect(TokenCache.invalidated(state, 2)).toBe(state)
    }
  })
})

describe("throttleOf", () => {
  it("a 429, or a 503 with Retry-After, starts a pause of that length; nothing else does", () => {
    expect(TokenCache.throttleOf(rateLimited(2_000), 100)).toEqual({ until: 2_100, error: rateLimited(2_000) })
    expect(TokenCache.throttleOf(serverError(503, 2_000), 100)).toEqual({
      until: 2_100,
      error: serverError(503, 2_000)
    })
    expect(TokenCache.throttleOf(rateLimited(), 100)).toBeUndefined()
    expect(TokenCache.throttleOf(serverError(500, 2_000), 100)).toBeUndefined()
    expect(TokenCache.throttleOf(serverError(502, 2_000), 100)).toBeUndefined()
    expect(TokenCache.throttleOf(serverError(503), 100)).toBeUndefined()
  })
})

describe("backgroundStep", () => {
  const policy = { maxRetries: 3, baseDelayMillis: 1_000, maxDelayMillis: 30_000, retryRateLimited: true }
  it("retries what is worth retrying, with the backoff, never past the hard window", () => {
    expect(TokenCache.backgroundStep(policy, serverError(500), 1, 0, 60_000, 0.5)).toEqual({
      _tag: "Retry",
      delayMillis: 750
    })
    expect(TokenCache.backgroundStep(policy, serverError(500), 3, 0, 60_000, 0.5)).toEqual({
      _tag: "Retry",
      delayMillis: 3_000
    })
    // The backoff is cut at the hard window, where callers start waiting anyway.
    expect(TokenCache.backgroundStep(policy, serverError(500), 5, 59_000, 60_000, 0.5)).toEqual({
      _tag: "Retry",
      delayMillis: 1_000
    })
    // A Retry-After is honoured; one that reaches the hard window gives up (the pause is remembered).
    expect(TokenCache.backgroundStep(policy, rateLimited(10_000), 1, 0, 60_000, 0.5)).toEqual({
      _tag: "Retry",
      delayMillis: 10_000
    })
    expect(TokenCache.backgroundStep(policy, rateLimited(60_000), 1, 0, 60_000, 0.5)).toEqual({ _tag: "GiveUp" })
    expect(TokenCache.backgroundStep(policy, rateLimited(59_999), 1, 0, 60_000, 0.5)._tag).toBe("Retry")
    // A refusal (4xx) is not worth retrying.
    const refused = new ClinicalError.Unauthorized({ operation: "token", status: 401 })
    expect(TokenCache.backgroundStep(policy, refused, 1, 0, 60_000, 0.5)).toEqual({ _tag: "GiveUp" })
  })
})

/** The steps of the model: time passes, a caller gets a token, the refresh in flight ends, a token is refused. */
const commands = fc.array(
  fc.oneof(
    fc.record({ _tag: fc.constant("Advance" as const), millis: fc.integer({ min: 0, max: 2 * HOUR }) }),
    fc.constant({ _tag: "Get" as const }),
    fc.record({ _tag: fc.constant("Succeed" as const), lifetime: fc.integer({ min: 1_000, max: 3 * HOUR }) }),
    fc.record({
      _tag: fc.constant("Fail" as const),
      retryAfter: fc.option(fc.integer({ min: 0, max: 60_000 }), { nil: undefined })
    }),
    fc.record({ _tag: fc.constant("Invalidate" as const), stale: fc.boolean() })
  ),
  { maxLength: 60 }
)

describe("the model: random sequences of time, gets, refresh outcomes and invalidations", () => {
  it("never serves a token at or past expiry, runs one refresh at a time, caches no failure, ignores stale invalidations", () => {
    fc.assert(
      fc.property(commands, (steps) => {
        let state: State = TokenCache.empty
        let now = 0
        let refreshes = 0
        let issued = new Map<number, TokenCache.Cached<string>>()
        for (const step of steps) {
          switch (step._tag) {
            case "Advance":
              now += step.millis
              break
            case "Get": {
              const decision = TokenCache.decide(state, now)
              const cachedNow = TokenCache.cachedOf(state)
              if (decision._tag === "Serve" || decision._tag === "ServeAndRefresh") {
                // Never a token at or past its hard window (so never one at or past expiry).
                expect(cachedNow).toBeDefined()
                expect(decision.token).toBe(cachedNow!.token)
                expect(now).toBeLessThan(cachedNow!.hardAt)
                expect(now).toBeLessThan(cachedNow!.expiresAt)
              }
              if (decision._tag === "ServeAndRefresh" || decision._tag === "RefreshAndAwait") {
                // At most one refresh in flight.
                expect(state._tag).not.toBe("Refreshing")
                const reason = decision._tag === "ServeAndRefresh" ? "soft-window" : decision.reason
                state = TokenCache.started(state, `r${++refreshes}`, reason)
              }
              if (decision._tag === "Await") expect(state._tag).toBe("Refreshing")
              if (decision._tag === "FailFast") {
                expect(state._tag).toBe("Throttled")
                expect(decision.retryAfterMillis).toBeGreaterThan(0)
              }
              break
            }
            case "Succeed": {
              if (state._tag !== "Refreshing") break
              const before = state.generation
              state = TokenCache.succeeded(state, (generation) => {
                const token = {
                  token: `t${generation}`,
                  generation,
                  ...TokenCache.windowsOf(windows, now, step.lifetime)
                }
                issued = new Map([...issued, [generation, token]])
                return token
              })
              // A success numbers the token and resets the background status.
              expect(state).toMatchObject({ _tag: "Cached", generation: before + 1, background: "ready" })
              // The windows equal their formulas.
              const token = TokenCache.cachedOf(state)!
              expect(token.softAt).toBe(token.expiresAt - Math.min(300_000, step.lifetime / 2))
              expect(token.hardAt).toBe(token.expiresAt - Math.min(30_000, step.lifetime / 10))
              break
            }
            case "Fail": {
              if (state._tag !== "Refreshing") break
              const reason = state.reason
              const error = step.retryAfter === undefined ? serverError(500) : rateLimited(step.retryAfter)
              const throttle = TokenCache.throttleOf(error, now)
              state = TokenCache.failed(state, reason, throttle)
              // A failure is never cached: only a pause, and never past what was asked.
              if (throttle === undefined) {
                expect(state._tag).not.toBe("Throttled")
                const next = TokenCache.decide(state, now)
                if (TokenCache.cachedOf(state) === undefined) expect(next._tag).toBe("RefreshAndAwait")
              } else {
                expect(state).toMatchObject({ _tag: "Throttled", until: now + step.retryAfter! })
              }
              break
            }
            case "Invalidate": {
              const current = TokenCache.cachedOf(state)
              const generation = step.stale ? state.generation - 1 : state.generation
              const next = TokenCache.invalidated(state, generation)
              if (current === undefined || current.generation !== generation) {
                // A stale invalidation changes nothing.
                expect(next).toBe(state)
              } else {
                expect(TokenCache.cachedOf(next)).toBeUndefined()
                expect(next.generation).toBe(state.generation)
              }
              state = next
              break
            }
          }
          // A cached token is always one that was issued, and generations only grow.
          const current = TokenCache.cachedOf(state)
          if (current !== undefined) expect(issued.get(current.generation)).toEqual(current)
        }
      }),
      { numRuns: 2_000, seed: 20261123 }
    )
  })
})
