/**
 * The token endpoint's pause (429, or 503 with Retry-After) shared through the token store (issue
 * 25): the other instances fail fast or wait it out instead of asking, under `TestClock`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Metric, type Scope, TestClock } from "effect"
import { ClinicalError, MedicationService, TokenService, TokenStore } from "effect-clinical"
import * as Telemetry from "../src/internal/observability/telemetry.js"
import * as Fake from "./support/FakeService.js"
import {
  clientOver,
  CPU_BOUND_MILLIS,
  instance,
  MINUTE,
  runClock,
  SECOND,
  settle,
  storeKey,
  stuckHolder,
  twoInstances,
  twoInstancesOver,
  valueOf
} from "./support/tokenStoreFixtures.js"

describe("the token endpoint's pause, shared through the store (issue 25)", () => {
  const throttled = (status: number, retryAfter?: string) =>
    Fake.respond(status, {}, retryAfter === undefined ? {} : { "Retry-After": retryAfter })
  const TOKEN_URL = `${Fake.AUTH_URL}${Fake.TOKEN_PATH}`

  it.scoped("one instance told to wait 5 s: the other fails fast with the same error counting down, nothing sent; then asks", () =>
    Effect.gen(function*() {
      const { a, b, fake, store } = yield* twoInstances
      yield* fake.scriptToken(throttled(429, "5"))
      expect(yield* Effect.flip(a(TokenService.get))).toMatchObject({ _tag: "RateLimited", retryAfterMillis: 5000 })
      expect((yield* store.read(storeKey)).paused).toEqual({ status: 429, remainingMillis: 5000 })
      const fastFails = (yield* Metric.value(Telemetry.throttledFastFails)).count
      yield* TestClock.adjust(2 * SECOND)
      const refused = yield* Effect.flip(b(TokenService.get))
      expect(refused).toBeInstanceOf(ClinicalError.RateLimited)
      expect(refused).toMatchObject({
        operation: "token",
        method: "POST",
        url: TOKEN_URL,
        status: 429,
        retryAfterMillis: 3000
      })
      expect(yield* fake.tokenRequests).toHaveLength(1)
      expect((yield* Metric.value(Telemetry.throttledFastFails)).count).toBe(fastFails + 1)
      // b remembers it too: asked again at once, it does not even read the store.
      expect(yield* Effect.flip(b(TokenService.get))).toMatchObject({ _tag: "RateLimited", retryAfterMillis: 3000 })
      yield* TestClock.adjust(3 * SECOND)
      expect(yield* b(TokenService.get)).toMatchObject({ source: "server", storeGeneration: 1 })
      expect(valueOf(yield* a(TokenService.get))).toBe(Fake.tokenValue(1))
      expect(yield* fake.tokenRequests).toHaveLength(2)
    }))

  it.scoped(
    "an instance asking alone (the holder stuck a whole lease) and told to wait: the pause is the fleet's too",
    () =>
      Effect.gen(function*() {
        const { fake, shared } = yield* stuckHolder
        // Longer than the wait before asking alone, so that it still runs when read.
        yield* fake.scriptToken(throttled(429, "60"))
        const a = yield* instance(clientOver(fake, shared))
        const caller = yield* Effect.fork(a(TokenService.get))
        yield* runClock(220, 100)
        expect(yield* Effect.flip(Fiber.join(caller))).toMatchObject({ _tag: "RateLimited", retryAfterMillis: 60_000 })
        expect(yield* fake.tokenRequests).toHaveLength(1)
        expect((yield* shared.read(storeKey)).paused).toMatchObject({ status: 429 })
      }),
    CPU_BOUND_MILLIS
  )

  it.scoped("a call on another instance waits the fleet's pause out and succeeds: its first data request after the pause", () =>
    Effect.gen(function*() {
      const { a, b, fake } = yield* twoInstances
      yield* fake.scriptToken(throttled(429, "3"))
      yield* Effect.flip(a(TokenService.get))
      const { medications } = yield* Fake.runWithClock(b(MedicationService.get(Fake.PERSON_UID)))
      expect(medications).toEqual(Fake.MEDICATIONS)
      const tokenRequests = yield* fake.tokenRequests
      expect(tokenRequests.map((request) => request.at)).toEqual([0, expect.any(Number)])
      expect(tokenRequests[1]!.at).toBeGreaterThanOrEqual(3 * SECOND)
      expect((yield* fake.dataRequests).map((request) => request.at)).toEqual([tokenRequests[1]!.at])
    }))

  /**
   * `a` holds the lease while the token endpoint answers 503 with `Retry-After: 30`, `b` waiting for
   * it; the clock run `afterSteps` × 100 ms once the answer is out. Both fibers, and the fake.
   */
  const waiterDuringThePause = <E>(
    instances: Effect.Effect<Pick<Effect.Effect.Success<typeof twoInstances>, "a" | "b" | "fake">, E, Scope.Scope>,
    afterSteps: number
  ) =>
    Effect.gen(function*() {
      const { a, b, fake } = yield* instances
      const gate = yield* Deferred.make<void>()
      yield* fake.scriptToken(() => Effect.zipRight(Deferred.await(gate), throttled(503, "30")(undefined as never)))
      const first = yield* Effect.fork(Effect.flip(a(TokenService.get)))
      yield* settle
      const second = yield* Effect.fork(Effect.flip(b(TokenService.get)))
      yield* runClock(4, 100) // b polls while a holds the lease
      yield* Deferred.succeed(gate, undefined)
      yield* runClock(afterSteps, 100)
      return { first, second, fake }
    })

  it.scoped("an instance waiting for the leaseholder learns of its pause and asks nothing: one token request", () =>
    Effect.gen(function*() {
      const { fake, first, second } = yield* waiterDuringThePause(twoInstances, 10)
      expect(yield* Fiber.join(first)).toMatchObject({ _tag: "ServerError", status: 503, retryAfterMillis: 30_000 })
      const refused = yield* Fiber.join(second)
      expect(refused).toMatchObject({ _tag: "ServerError", operation: "token", status: 503 })
      expect((refused as ClinicalError.ServerError).retryAfterMillis).toBeGreaterThan(28 * SECOND)
      expect(yield* fake.tokenRequests).toHaveLength(1)
    }))

  it.scoped("the pause is in the store before the lease is free: a store slow to record it still sees one request", () =>
    Effect.gen(function*() {
      const memory = TokenStore.memory()
      // Recording the pause takes a second: the lease must not be given back before it is done.
      const { fake, first, second } = yield* waiterDuringThePause(
        twoInstancesOver({
          ...memory,
          pause: (key, status, ttl) => Effect.zipRight(Effect.sleep(SECOND), memory.pause!(key, status, ttl))
        }),
        30
      )
      yield* Fiber.join(first)
      expect(yield* Fiber.join(second)).toMatchObject({ _tag: "ServerError", status: 503 })
      expect(yield* fake.tokenRequests).toHaveLength(1)
    }))

  it.scoped("a leaseholder records its pause even while it leaves a failing store alone, as it gives the lease back", () =>
    Effect.gen(function*() {
      const memory = TokenStore.memory()
      let reads = 0
      // The leaseholder's second read fails: the store is then left alone for 5 s.
      const { a, b, fake } = yield* twoInstancesOver({
        ...memory,
        retryAfterMillis: 5 * SECOND,
        read: (key) =>
          Effect.suspend(() =>
            ++reads === 2
              ? Effect.fail(
                new ClinicalError.TokenStoreError({ operation: "token", reason: "Unavailable", detail: "blip" })
              )
              : memory.read(key)
          )
      })
      yield* fake.scriptToken(throttled(429, "30"))
      expect(yield* Effect.flip(a(TokenService.get))).toMatchObject({ _tag: "RateLimited", retryAfterMillis: 30_000 })
      expect(yield* memory.read(storeKey)).toMatchObject({ lease: undefined, paused: { status: 429 } })
      expect(yield* Effect.flip(b(TokenService.get))).toMatchObject({ _tag: "RateLimited" })
      expect(yield* fake.tokenRequests).toHaveLength(1)
    }))

  it.scoped("a 503 without Retry-After, or a 500, asks for no pause: the other instance asks itself", () =>
    Effect.gen(function*() {
      const { a, b, fake, store } = yield* twoInstances
      for (const answer of [throttled(503), throttled(500, "5")]) {
        yield* fake.scriptToken(answer)
        expect(yield* Effect.flip(a(TokenService.get))).toMatchObject({ _tag: "ServerError" })
        expect((yield* store.read(storeKey)).paused).toBeUndefined()
      }
      expect(yield* b(TokenService.get)).toMatchObject({ source: "server" })
      expect(yield* fake.tokenRequests).toHaveLength(3)
    }))

  it.scoped("a pause longer than maxRetryAfter: waited in steps of maxRetryAfter, the store read again after each", () =>
    Effect.gen(function*() {
      const fake = yield* Fake.make()
      const store = TokenStore.memory()
      yield* store.pause!(storeKey, 429, 25 * SECOND)
      const b = yield* instance(clientOver(fake, store, { maxRetryAfter: "10 seconds" }))
      expect(yield* Effect.flip(b(TokenService.get))).toMatchObject({ _tag: "RateLimited", retryAfterMillis: 10_000 })
      yield* TestClock.adjust(10 * SECOND)
      expect(yield* Effect.flip(b(TokenService.get))).toMatchObject({ _tag: "RateLimited", retryAfterMillis: 10_000 })
      yield* TestClock.adjust(10 * SECOND)
      expect(yield* Effect.flip(b(TokenService.get))).toMatchObject({ _tag: "RateLimited", retryAfterMillis: 5_000 })
      yield* TestClock.adjust(5 * SECOND)
      expect(yield* b(TokenService.get)).toMatchObject({ source: "server" })
      expect(yield* fake.tokenRequests).toHaveLength(1)
    }))

  it.scoped("a pause with more than an hour left is no instance's (planted): not honoured; an hour is", () =>
    Effect.gen(function*() {
      const fake = yield* Fake.make()
      const planted = TokenStore.memory()
      yield* planted.pause!(storeKey, 429, 60 * MINUTE + 1)
      const b = yield* instance(clientOver(fake, planted))
      expect(yield* b(TokenService.get)).toMatchObject({ source: "server" })
      const hour = TokenStore.memory()
      yield* hour.pause!(storeKey, 429, 60 * MINUTE)
      const c = yield* instance(clientOver(fake, hour))
      // Honoured, cut to maxRetryAfter (60 s by default) before the next read.
      expect(yield* Effect.flip(c(TokenService.get))).toMatchObject({ _tag: "RateLimited", retryAfterMillis: MINUTE })
      expect(yield* fake.tokenRequests).toHaveLength(1)
    }))

  it.effect("the memory store keeps the longer of two pauses, forgets one that has run out, replaces one too long", () =>
    Effect.gen(function*() {
      const store = TokenStore.memory()
      yield* store.pause!("k", 429, 5 * SECOND)
      yield* store.pause!("k", 503, 2 * SECOND)
      expect((yield* store.read("k")).paused).toEqual({ status: 429, remainingMillis: 5 * SECOND })
      yield* store.pause!("k", 503, 8 * SECOND)
      expect((yield* store.read("k")).paused).toEqual({ status: 503, remainingMillis: 8 * SECOND })
      yield* TestClock.adjust(8 * SECOND)
      expect((yield* store.read("k")).paused).toBeUndefined()
      // One longer than any instance records is no instance's: a real one replaces it.
      yield* store.pause!("k", 429, 2 * 60 * MINUTE)
      yield* store.pause!("k", 503, SECOND)
      expect((yield* store.read("k")).paused).toEqual({ status: 503, remainingMillis: SECOND })
    }))

  it.scoped("a custom store without pause still works: nothing is shared", () =>
    Effect.gen(function*() {
      const { pause: _, ...withoutPause } = TokenStore.memory()
      const { a, b, fake } = yield* twoInstancesOver(withoutPause)
      yield* fake.scriptToken(throttled(429, "5"))
      yield* Effect.flip(a(TokenService.get))
      expect(yield* b(TokenService.get)).toMatchObject({ source: "server" })
      expect(yield* fake.tokenRequests).toHaveLength(2)
    }))
})
