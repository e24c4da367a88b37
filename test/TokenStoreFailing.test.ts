/**
 * A token store that fails (local: the instance gets its own token; fail: the refresh fails), and a
 * store someone else writes to (issue 22: a lease rewritten by other holders), under `TestClock`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Either, Fiber, Layer, Metric, TestClock } from "effect"
import { ClinicalError, MedicationService, TokenService, TokenStore } from "effect-clinical"
import * as TokenSharing from "../core/token/tokenSharing.js"
import * as Telemetry from "../src/internal/observability/telemetry.js"
import * as Fake from "./support/FakeService.js"
import * as Leaks from "./support/Leaks.js"
import {
  clientOver,
  CPU_BOUND_MILLIS,
  instance,
  MINUTE,
  runClock,
  SECOND,
  settle,
  storeKey
} from "./support/tokenStoreFixtures.js"

/** Runs the clock 10 ms at a time until `fiber` is done (20 s of it at most); how much of it that took. */
const untilDone = <A, E>(fiber: Fiber.Fiber<A, E>) =>
  Effect.gen(function*() {
    const start = yield* Clock.currentTimeMillis
    for (let step = 0; step < 2000; step++) {
      yield* settle
      if ((yield* Fiber.poll(fiber))._tag === "Some") break
      yield* TestClock.adjust(10)
    }
    return (yield* Clock.currentTimeMillis) - start
  })

/** A store whose every operation runs `operation`, counting the attempts. */
const brokenStore = (
  onUnavailable: TokenStore.OnUnavailable,
  operation: Effect.Effect<never, ClinicalError.TokenStoreError>
) => {
  let calls = 0
  const run = () => Effect.suspend(() => (calls++, operation))
  const store: TokenStore.Service = {
    read: run,
    acquireLease: run,
    releaseLease: run,
    publish: run,
    invalidate: run,
    timeoutMillis: 250,
    retryAfterMillis: 10 * MINUTE,
    onUnavailable
  }
  return { store, calls: () => calls }
}

// The store's own text echoes the ApplicationId, as a misconfigured proxy might.
const refused = Effect.fail(
  new ClinicalError.TokenStoreError({
    operation: "token",
    reason: "Unavailable",
    detail: `connect ECONNREFUSED for ${Fake.APPLICATION_ID.toUpperCase()}`
  })
)

describe("a token store that fails", () => {
  it.scoped("local: the instance gets its own token at once, logs once, counts, and tries the store again after a pause", () =>
    Effect.gen(function*() {
      const fake = yield* Fake.make({ lifetimeMillis: 2 * MINUTE })
      const logs = Leaks.captureLogs()
      const { calls, store } = brokenStore("local", refused)
      const failures = Metric.tagged(Telemetry.tokenStoreFailures, "reason", "Unavailable")
      const before = (yield* Metric.value(failures)).count
      const client = yield* instance(Layer.merge(clientOver(fake, store), logs.layer))
      const token = yield* client(TokenService.get)
      expect(token).toMatchObject({ source: "server", storeGeneration: undefined })
      expect(calls()).toBe(1)
      // Within the pause, refreshes do not touch the store.
      yield* TestClock.adjust(2 * MINUTE)
      yield* client(TokenService.get)
      expect(calls()).toBe(1)
      // After it (10 minutes), the store is tried again (and fails again).
      yield* TestClock.adjust(8 * MINUTE)
      yield* client(TokenService.get)
      expect(calls()).toBe(2)
      expect(yield* fake.tokenRequests).toHaveLength(3)
      expect((yield* Metric.value(failures)).count - before).toBe(2)
      const warnings = logs.lines.filter((line) =>
        line.startsWith("timestamp") && line.includes("token store unavailable")
      )
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toContain("level=WARN")
      for (const line of logs.lines) Leaks.expectNone("log line", line, [Fake.APPLICATION_ID])
    }))

  it.scoped("local: a store that does not answer holds a refresh no longer than its timeout", () =>
    Effect.gen(function*() {
      const fake = yield* Fake.make()
      const { store } = brokenStore("local", Effect.never)
      const client = yield* instance(clientOver(fake, store))
      const waiting = yield* Effect.fork(client(TokenService.get))
      yield* TestClock.adjust(249)
      expect(yield* Fiber.poll(waiting)).toMatchObject({ _tag: "None" })
      yield* TestClock.adjust(1)
      const token = yield* Fiber.join(waiting)
      expect(token.source).toBe("server")
      expect(yield* fake.tokenRequests).toHaveLength(1)
    }))

  it.scoped("fail: the refresh fails with TokenStoreError, nothing is sent, and the error holds no secret", () =>
    Effect.gen(function*() {
      const fake = yield* Fake.make()
      const { calls, store } = brokenStore("fail", refused)
      const client = yield* instance(clientOver(fake, store))
      const exit = yield* Effect.exit(client(TokenService.get))
      expect(exit).toMatchObject({
        _tag: "Failure",
        cause: { error: { _tag: "TokenStoreError", reason: "Unavailable" } }
      })
      expect(yield* fake.tokenRequests).toHaveLength(0)
      // The read, and nothing else: no lease was taken, so none is given back.
      yield* runClock(2, 100)
      expect(calls()).toBe(1)
      Leaks.expectNoneInExit(exit, [Fake.APPLICATION_ID])
      // A call retries it like a network failure, and fails with it once the retries are spent.
      const call = yield* Effect.fork(client(MedicationService.get(Fake.PERSON_UID)))
      yield* TestClock.adjust(MINUTE)
      const error = yield* Effect.flip(Fiber.join(call))
      expect(error).toMatchObject({ _tag: "TokenStoreError" })
      expect(yield* fake.tokenRequests).toHaveLength(0)
    }))

  it.scoped("a store that answers again is used again, and said to be back once", () =>
    Effect.gen(function*() {
      const fake = yield* Fake.make({ lifetimeMillis: 2 * MINUTE })
      const logs = Leaks.captureLogs()
      const healthy = TokenStore.memory()
      let broken = true
      const flaky: TokenStore.Service = {
        ...healthy,
        read: (key) => Effect.suspend(() => (broken ? refused : healthy.read(key))),
        timeoutMillis: 250,
        retryAfterMillis: 5 * SECOND
      }
      const client = yield* instance(Layer.merge(clientOver(fake, flaky), logs.layer))
      expect(yield* client(TokenService.get)).toMatchObject({ storeGeneration: undefined })
      broken = false
      yield* TestClock.adjust(2 * MINUTE)
      expect(yield* client(TokenService.get)).toMatchObject({ storeGeneration: 1 })
      const lines = logs.lines.filter((line) => line.startsWith("timestamp") && line.includes("token store"))
      expect(lines.map((line) => /message="([^"]*)"/.exec(line)?.[1])).toEqual([
        "token store unavailable; this instance gets its own tokens until it is back",
        "token store available again"
      ])
    }))
})

describe("a store someone else writes to (issue 22)", () => {
  /** A store whose lease someone rewrites with a new holder before every read, as often as it is read. */
  const rotatingLease = (onUnavailable: TokenStore.OnUnavailable) => {
    const shared = TokenStore.memory()
    let holder = 0
    const rotate = (key: string) =>
      Effect.zipRight(
        shared.releaseLease(key, `rogue-${holder}`),
        shared.acquireLease(key, `rogue-${++holder}`, 60_000)
      )
    const store: TokenStore.Service = {
      ...shared,
      onUnavailable,
      read: (key) => Effect.zipRight(rotate(key), shared.read(key))
    }
    return { store, shared, holders: () => holder }
  }

  it.scoped(
    "a lease rewritten with a new holder every moment: fail-open waits about a second, then one request each at most",
    () =>
      Effect.gen(function*() {
        const fake = yield* Fake.make()
        const { holders, shared, store } = rotatingLease("local")
        const a = yield* instance(clientOver(fake, store))
        const b = yield* instance(clientOver(fake, store))
        const callers = yield* Effect.fork(Effect.all([a(TokenService.get), b(TokenService.get)], { concurrency: 2 }))
        const waited = yield* untilDone(callers)
        expect(waited).toBeGreaterThanOrEqual(SECOND)
        expect(waited).toBeLessThanOrEqual(2 * SECOND)
        const tokens = yield* Fiber.join(callers)
        expect(holders()).toBeGreaterThan(4)
        // Each gave up waiting and fetched alone, or found what the other fetched alone and offered
        // to the store (as after any failure of it): at most one request each.
        expect(tokens.map((token) => token.source)).toContain("server")
        expect((yield* fake.tokenRequests).length).toBeLessThanOrEqual(2)
        expect((yield* shared.read(storeKey)).stored).toBeDefined()
      }),
    CPU_BOUND_MILLIS
  )

  it.scoped(
    "fail-closed: the refresh fails with TokenStoreError (Timeout) after about a second, and no token is requested",
    () =>
      Effect.gen(function*() {
        const fake = yield* Fake.make()
        const { store } = rotatingLease("fail")
        // Not at the clock's zero: the wait is counted from when the lease first changed hands.
        yield* TestClock.adjust(60 * MINUTE)
        const a = yield* instance(clientOver(fake, store))
        const refresh = yield* Effect.fork(Effect.either(a(TokenService.get)))
        const waited = yield* untilDone(refresh)
        expect(waited).toBeLessThanOrEqual(2 * SECOND)
        const outcome = yield* Fiber.join(refresh)
        expect(Either.getLeft(outcome)).toMatchObject({
          _tag: "Some",
          value: { _tag: "TokenStoreError", operation: "token", reason: "Timeout" }
        })
        const detail = (Either.getOrThrowWith(Either.flip(outcome), (x) => x) as ClinicalError.TokenStoreError).detail
        expect(detail).toMatch(/^the lease changed hands \d+ times in \d+ ms without a token published$/)
        const [changes, millis] = (detail.match(/\d+/g) ?? []).map(Number)
        expect(changes).toBeGreaterThanOrEqual(2)
        expect(millis).toBeGreaterThanOrEqual(SECOND)
        expect(millis).toBeLessThan(2 * SECOND)
        expect(yield* fake.tokenRequests).toHaveLength(0)
      }),
    CPU_BOUND_MILLIS
  )

  /** Someone re-taking the lease with a new holder every 100 ms of the clock, never publishing. */
  const churning = (store: TokenStore.Service) =>
    Effect.forkScoped(Effect.gen(function*() {
      for (let holder = 1;; holder++) {
        yield* store.releaseLease(storeKey, `rogue-${holder - 1}`)
        yield* store.acquireLease(storeKey, `rogue-${holder}`, 60_000)
        yield* Effect.sleep(100)
      }
    }))

  it.scoped(
    "a lease re-taken by a new holder every 100 ms, no token published: a call falls back to a token of its own within about a second",
    () =>
      Effect.gen(function*() {
        const fake = yield* Fake.make()
        // Left alone 5 s after a failure, as the Redis store is by default.
        const store: TokenStore.Service = { ...TokenStore.memory(), retryAfterMillis: 5 * SECOND }
        const timeouts = Metric.tagged(Telemetry.tokenStoreFailures, "reason", "Timeout")
        const timeoutsBefore = (yield* Metric.value(timeouts)).count
        yield* churning(store)
        const a = yield* instance(clientOver(fake, store))
        const call = yield* Effect.fork(a(MedicationService.get(Fake.PERSON_UID)))
        const waited = yield* untilDone(call)
        expect(waited).toBeGreaterThanOrEqual(SECOND)
        expect(waited).toBeLessThanOrEqual(2 * SECOND)
        expect((yield* Fiber.join(call)).medications).toEqual(Fake.MEDICATIONS)
        expect(yield* fake.tokenRequests).toHaveLength(1)
        // Counted as a failure of the store, which is left alone meanwhile: the next refresh waits for nothing.
        expect((yield* Metric.value(timeouts)).count).toBe(timeoutsBefore + 1)
        yield* a(TokenService.invalidate(yield* a(TokenService.get)))
        const again = yield* Effect.fork(a(TokenService.get))
        expect(yield* untilDone(again)).toBe(0)
        expect(yield* fake.tokenRequests).toHaveLength(2)
      }),
    CPU_BOUND_MILLIS
  )

  it("unit: a wait on a lease that changes hands twice or more ends a second after its first change", () => {
    const lease = 11_500
    const poll = (waiting: TokenSharing.Waiting, holder: string, now: number) => {
      const step = TokenSharing.waitStep(waiting, holder, now, lease)
      expect(step._tag).toBe("Poll")
      return (step as Extract<TokenSharing.WaitStep, { _tag: "Poll" }>).waiting
    }
    const first = poll(undefined as never, "a", 1000)
    expect(first).toEqual({ holder: "a", since: 1000, churn: undefined })
    const once = poll(first, "b", 1100)
    expect(once).toEqual({ holder: "b", since: 1100, churn: { since: 1100, changes: 1 } })
    // One change alone is a holder replaced (one that died): its new holder has its whole lease.
    expect(TokenSharing.waitStep(once, "b", 1100 + lease - 1, lease)._tag).toBe("Poll")
    expect(TokenSharing.waitStep(once, "b", 1100 + lease, lease)).toEqual({ _tag: "AskAlone" })
    const twice = poll(once, "c", 1200)
    expect(twice).toEqual({ holder: "c", since: 1200, churn: { since: 1100, changes: 2 } })
    expect(TokenSharing.waitStep(twice, "c", 2099, lease)._tag).toBe("Poll")
    expect(TokenSharing.waitStep(twice, "c", 2100, lease)).toEqual({ _tag: "Churned", changes: 2, millis: 1000 })
    expect(TokenSharing.waitStep(twice, "d", 2100, lease)).toEqual({ _tag: "Churned", changes: 3, millis: 1000 })
  })
})
