/**
 * The token store's protocol, with clients of one process sharing an in-memory store under
 * `TestClock`: what a fleet does through Redis (test/RedisTokenStore.test.ts and
 * test/Fleet.test.ts run it on a real one), here deterministic.
 */
import { describe, expect, it } from "@effect/vitest"
import {
  Clock,
  Deferred,
  Effect,
  Either,
  Fiber,
  HashMap,
  Layer,
  Logger,
  Metric,
  Redacted,
  type Scope,
  TestClock
} from "effect"
import { type ClinicalClient, ClinicalError, MedicationService, TokenService, TokenStore } from "effect-clinical"
import * as Crypto from "node:crypto"
import { firstConnection } from "../core/token/redisReady.js"
import * as TokenSharing from "../core/token/tokenSharing.js"
import * as Telemetry from "../src/internal/observability/telemetry.js"
import * as RedisTokenStore from "../src/internal/token/redisTokenStore.js"
import * as StoredEntry from "../src/internal/token/storedEntry.js"
import * as Fake from "./support/FakeService.js"
import * as Keys from "./support/Keys.js"
import * as Leaks from "./support/Leaks.js"

const SECOND = 1000
// Tests driven by the TestClock through many steps (400 in the rotating-lease tests): seconds of
// CPU alone, longer beside the suite's other files; no real time is waited for.
const CPU_BOUND_MILLIS = 60_000
const MINUTE = 60 * SECOND

type Client = Layer.Layer<ClinicalClient.Services, unknown>

/** A client over `fake` whose token store is `store` (shared with any other client given it). */
const clientOver = (fake: Fake.FakeService, store: TokenStore.Service, overrides = {}): Client =>
  Fake.clientLayer(fake, overrides).pipe(Layer.provide(Layer.succeed(TokenStore.TokenStore, store)))

/** Builds `client` once and returns a runner of effects against that one instance. */
/** A fake service, and a memory store whose lease a holder ("stuck") keeps for 10 minutes without publishing. */
const stuckHolder = Effect.gen(function*() {
  const fake = yield* Fake.make()
  const shared = TokenStore.memory()
  yield* shared.acquireLease(storeKey, "stuck", 10 * MINUTE)
  return { fake, shared }
})

const instance = (client: Client) =>
  Effect.map(
    Layer.build(client),
    (context) => <A, E>(effect: Effect.Effect<A, E, ClinicalClient.Services>) => Effect.provide(effect, context)
  )

/** A fake service and two instances over `store` (a fleet of two). */
const twoInstancesOver = <S extends TokenStore.Service>(store: S) =>
  Effect.gen(function*() {
    const fake = yield* Fake.make()
    const a = yield* instance(clientOver(fake, store))
    const b = yield* instance(clientOver(fake, store))
    return { a, b, fake, store }
  })

/** The same over a fresh in-memory store. */
const twoInstances = Effect.suspend(() => twoInstancesOver(TokenStore.memory()))

/** A token responder that waits for `gate` before the fake issues the token. */
const gated = (fake: Fake.FakeService, gate: Deferred.Deferred<void>): Fake.Responder => () =>
  Effect.zipRight(Deferred.await(gate), fake.issueToken)

/** Lets forked fibers run until they block. */
const settle = Effect.gen(function*() {
  for (let i = 0; i < 20; i++) yield* Effect.yieldNow()
})

const storeKey = TokenService.storeKey(
  {
    baseUrl: Fake.BASE_URL,
    authUrl: Fake.AUTH_URL,
    tokenPath: Fake.TOKEN_PATH,
    applicationId: Redacted.make(Fake.APPLICATION_ID)
  } as Parameters<typeof TokenService.storeKey>[0]
)

const valueOf = (token: TokenService.AccessToken) => Redacted.value(token.token)

/** A store entry of `token` with an hour's lifetime and no clock skew. */
const entryOf = (token: string): StoredEntry.Entry => ({
  token: Redacted.make(token),
  lifetimeMillis: 60 * MINUTE,
  serverLifetimeMillis: 60 * MINUTE,
  serverClockSkewMillis: undefined
})

describe("clients sharing a token store", () => {
  it.scoped("on a cold store, many callers of two instances make one token request", () =>
    Effect.gen(function*() {
      const { a, b, fake } = yield* twoInstances
      const gate = yield* Deferred.make<void>()
      yield* fake.scriptToken(gated(fake, gate))
      const callers = yield* Effect.fork(Effect.all(
        Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a : b)(TokenService.get)),
        { concurrency: "unbounded" }
      ))
      yield* settle
      yield* TestClock.adjust(100) // b polls while a holds the lease
      yield* Deferred.succeed(gate, undefined)
      yield* settle
      yield* TestClock.adjust(1 * SECOND)
      const tokens = yield* Fiber.join(callers)
      expect(yield* fake.tokenRequests).toHaveLength(1)
      expect(new Set(tokens.map(valueOf))).toEqual(new Set([Fake.tokenValue(1)]))
      expect(new Set(tokens.map((token) => token.source))).toEqual(new Set(["server", "store"]))
      expect(new Set(tokens.map((token) => token.storeGeneration))).toEqual(new Set([1]))
    }))

  it.scoped("a token one instance refreshed is adopted by the other in its soft window: one request per lifetime", () =>
    Effect.gen(function*() {
      const { a, b, fake, store } = yield* twoInstances
      const first = yield* a(TokenService.get)
      const adopted = yield* b(TokenService.get)
      expect(valueOf(adopted)).toBe(valueOf(first))
      expect(adopted).toMatchObject({ source: "store", storeGeneration: 1, expiresAt: first.expiresAt })
      yield* TestClock.adjust(56 * MINUTE) // inside the 5-minute soft window
      yield* a(TokenService.get) // a starts the background refresh
      yield* settle
      yield* b(TokenService.get) // b too: it finds a's new token in the store
      yield* settle
      expect(valueOf(yield* b(TokenService.get))).toBe(Fake.tokenValue(2))
      expect(valueOf(yield* a(TokenService.get))).toBe(Fake.tokenValue(2))
      expect(yield* fake.tokenRequests).toHaveLength(2)
      const snapshot = yield* store.read(storeKey)
      expect(snapshot.generation).toBe(2)
      expect(snapshot.stored?.remainingMillis).toBe(60 * MINUTE)
    }))

  it.scoped("a fleet-wide revocation costs one token request; a late refusal leaves the newer token stored", () =>
    Effect.gen(function*() {
      const { a, b, fake, store } = yield* twoInstances
      yield* a(TokenService.get)
      yield* b(TokenService.get)
      yield* fake.revokeAll
      // a is refused first: it drops generation 1 from the store and publishes generation 2.
      yield* a(MedicationService.get(Fake.PERSON_UID))
      expect((yield* store.read(storeKey)).stored?.generation).toBe(2)
      // b is refused with generation 1 later: the store keeps 2, and b takes it.
      const { medications } = yield* b(MedicationService.get(Fake.PERSON_UID))
      expect(medications).toEqual(Fake.MEDICATIONS)
      expect((yield* store.read(storeKey)).stored?.generation).toBe(2)
      expect(yield* fake.tokenRequests).toHaveLength(2)
      const dataAuthorizations = (yield* fake.dataRequests).map((r) => r.headers["Authorization"])
      expect(dataAuthorizations).toEqual([
        `Bearer ${Fake.tokenValue(1)}`,
        `Bearer ${Fake.tokenValue(2)}`,
        `Bearer ${Fake.tokenValue(1)}`,
        `Bearer ${Fake.tokenValue(2)}`
      ])
    }))

  it.scoped("a leaseholder paused past its lease publishes late and loses to the newer token, which it adopts", () =>
    Effect.gen(function*() {
      const fake = yield* Fake.make()
      const shared = TokenStore.memory()
      const resume = yield* Deferred.make<void>()
      // a's publication waits until the test lets it go: a pause between fetching and publishing.
      const paused: TokenStore.Service = {
        ...shared,
        publish: (...args) => Effect.zipRight(Deferred.await(resume), shared.publish(...args))
      }
      const a = yield* instance(clientOver(fake, paused))
      const b = yield* instance(clientOver(fake, shared))
      const late = yield* Effect.fork(a(TokenService.get))
      yield* settle
      expect(yield* fake.tokenRequests).toHaveLength(1)
      expect((yield* shared.read(storeKey)).lease).toBeDefined()
      // The lease lasts the token timeout (10 s) plus a second; then b takes it and publishes.
      yield* TestClock.adjust(11 * SECOND)
      const newer = yield* b(TokenService.get)
      expect(newer).toMatchObject({ source: "server", storeGeneration: 1 })
      yield* Deferred.succeed(resume, undefined)
      const adopted = yield* Fiber.join(late)
      expect(valueOf(newer)).toBe(Fake.tokenValue(2))
      expect(valueOf(adopted)).toBe(Fake.tokenValue(2))
      expect(adopted).toMatchObject({ source: "store", storeGeneration: 1 })
      const snapshot = yield* shared.read(storeKey)
      expect(snapshot.generation).toBe(1)
      expect(Redacted.value(snapshot.stored!.entry.token)).toBe(Fake.tokenValue(2))
    }))
})

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

/** Runs the clock forward in steps, letting forked fibers run between them. */
const runClock = (steps: number, stepMillis: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < steps; i++) {
      yield* settle
      yield* TestClock.adjust(stepMillis)
    }
    yield* settle
  })

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

/** A token responder that takes `millis` of the clock before the fake issues the token. */
const slowToken = (fake: Fake.FakeService, millis: number): Fake.Responder => () =>
  Effect.zipRight(Effect.sleep(millis), fake.issueToken)

/** A memory store that can be swapped for a fresh one: Redis restarted without persistence. */
const restartable = () => {
  let current = TokenStore.memory()
  const store: TokenStore.Service = {
    ...current,
    read: (key) => Effect.suspend(() => current.read(key)),
    acquireLease: (key, owner, ttl) => Effect.suspend(() => current.acquireLease(key, owner, ttl)),
    releaseLease: (key, owner) => Effect.suspend(() => current.releaseLease(key, owner)),
    publish: (key, expected, entry, ttl, owner) =>
      Effect.suspend(() => current.publish(key, expected, entry, ttl, owner)),
    invalidate: (key, fingerprint) => Effect.suspend(() => current.invalidate(key, fingerprint)),
    pause: (key, status, ttl) => Effect.suspend(() => current.pause!(key, status, ttl))
  }
  return { store, restart: () => (current = TokenStore.memory()), current: () => current }
}

describe("found in review: leases changing hands, stores timing out, stores restarting", () => {
  it.scoped(
    "a leaseholder that died: the instances waiting for it make one token request among them",
    () =>
      Effect.gen(function*() {
        const fake = yield* Fake.make()
        const store = TokenStore.memory()
        yield* fake.scriptToken(...Array.from({ length: 10 }, () => slowToken(fake, 500)))
        // Another instance took the lease (10 s token timeout + 1 s) and died.
        expect(yield* store.acquireLease(storeKey, "dead", 11_000)).toBe(true)
        const clients = []
        for (let i = 0; i < 6; i++) clients.push(yield* instance(clientOver(fake, store)))
        yield* TestClock.adjust(10)
        const fibers = []
        for (const client of clients) fibers.push(yield* Effect.fork(client(TokenService.get)))
        yield* runClock(200, 100)
        const tokens = yield* Effect.all(fibers.map(Fiber.join))
        expect(yield* fake.tokenRequests).toHaveLength(1)
        expect(new Set(tokens.map(valueOf)).size).toBe(1)
      }),
    CPU_BOUND_MILLIS
  ) // 2 s of CPU alone; it passed 5 s beside the fleet's processes

  it.scoped("a leaseholder whose second read times out still fetches, publishes and gives the lease back", () =>
    Effect.gen(function*() {
      const fake = yield* Fake.make()
      const shared = TokenStore.memory()
      let reads = 0
      const flaky: TokenStore.Service = {
        ...shared,
        timeoutMillis: 250,
        retryAfterMillis: 5 * SECOND,
        read: (key) => Effect.suspend(() => (++reads === 2 ? Effect.never : shared.read(key)))
      }
      const a = yield* instance(clientOver(fake, flaky))
      const b = yield* instance(clientOver(fake, shared))
      const first = yield* Effect.fork(a(TokenService.get))
      yield* runClock(5, 100)
      expect(yield* Fiber.join(first)).toMatchObject({ storeGeneration: 1 })
      expect((yield* shared.read(storeKey)).lease).toBe(undefined)
      expect(yield* b(TokenService.get)).toMatchObject({ source: "store", storeGeneration: 1 })
      expect(yield* fake.tokenRequests).toHaveLength(1)
    }))

  it.scoped("a lease taken by a command that timed out but ran is given back by the publication that follows", () =>
    Effect.gen(function*() {
      const fake = yield* Fake.make()
      const shared = TokenStore.memory()
      const slow: TokenStore.Service = {
        ...shared,
        timeoutMillis: 250,
        retryAfterMillis: 5 * SECOND,
        // The lease is taken in Redis, but the answer never comes back.
        acquireLease: (...args) => Effect.zipRight(shared.acquireLease(...args), Effect.never)
      }
      const a = yield* instance(clientOver(fake, slow))
      const b = yield* instance(clientOver(fake, shared))
      const first = yield* Effect.fork(a(TokenService.get))
      yield* runClock(5, 100)
      expect(yield* Fiber.join(first)).toMatchObject({ source: "server" })
      // Nobody waits a whole lease: a's token is in the store, the lease is free again.
      expect((yield* shared.read(storeKey)).lease).toBe(undefined)
      expect(yield* b(TokenService.get)).toMatchObject({ source: "store" })
      expect(yield* fake.tokenRequests).toHaveLength(1)
    }))

  it.scoped("after the store restarts empty, a refusal of an old token never drops a new one numbered alike", () =>
    Effect.gen(function*() {
      const fake = yield* Fake.make()
      const { restart, store } = restartable()
      const a = yield* instance(clientOver(fake, store))
      const b = yield* instance(clientOver(fake, store))
      const c = yield* instance(clientOver(fake, store))
      yield* a(TokenService.get)
      const old = yield* b(TokenService.get)
      restart()
      yield* TestClock.adjust(30 * MINUTE)
      const fresh = yield* c(TokenService.get) // generation 1 again, another token
      expect(fresh.storeGeneration).toBe(old.storeGeneration)
      yield* b(TokenService.invalidate(old))
      const next = yield* b(TokenService.get)
      expect(valueOf(next)).toBe(valueOf(fresh))
      expect(yield* fake.tokenRequests).toHaveLength(2)
    }))

  it.scoped("after the store restarts empty, an instance adopts a new token numbered like the one it holds", () =>
    Effect.gen(function*() {
      const fake = yield* Fake.make()
      const { restart, store } = restartable()
      const a = yield* instance(clientOver(fake, store))
      const c = yield* instance(clientOver(fake, store))
      yield* a(TokenService.get)
      restart()
      yield* TestClock.adjust(30 * MINUTE)
      const fresh = yield* c(TokenService.get)
      yield* TestClock.adjust(26 * MINUTE) // a's soft window; c's token has 34 minutes left
      yield* a(TokenService.get)
      yield* settle
      expect(valueOf(yield* a(TokenService.get))).toBe(valueOf(fresh))
      expect(yield* fake.tokenRequests).toHaveLength(2)
    }))

  it.scoped("a publication that timed out but ran: the token it stored is dropped when refused, never adopted again", () =>
    Effect.gen(function*() {
      const fake = yield* Fake.make()
      const shared = TokenStore.memory()
      let slow = true
      const store: TokenStore.Service = {
        ...shared,
        timeoutMillis: 250,
        retryAfterMillis: 5 * SECOND,
        publish: (...args) => Effect.zipLeft(shared.publish(...args), slow ? Effect.never : Effect.void)
      }
      const a = yield* instance(clientOver(fake, store))
      const first = yield* Effect.fork(a(TokenService.get))
      yield* runClock(5, 100)
      expect(yield* Fiber.join(first)).toMatchObject({ storeGeneration: undefined })
      slow = false
      yield* TestClock.adjust(10 * MINUTE)
      yield* fake.revokeAll
      const call = yield* Effect.fork(a(MedicationService.get(Fake.PERSON_UID)))
      yield* runClock(100, 100)
      expect((yield* Fiber.join(call)).medications).toEqual(Fake.MEDICATIONS)
      expect(yield* fake.tokenRequests).toHaveLength(2)
    }))
})

/** `store`, but every publication times out. */
const publishFailing = (store: TokenStore.Service): TokenStore.Service => ({
  ...store,
  publish: () =>
    Effect.fail(new ClinicalError.TokenStoreError({ operation: "token", reason: "Timeout", detail: "lost" }))
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

describe("tokenSharing: the decisions", () => {
  const limits: TokenSharing.Limits = {
    hardWindowMillis: 30 * SECOND,
    maxLifetimeMillis: 24 * 60 * MINUTE,
    maxPauseMillis: MINUTE
  }
  const entry: StoredEntry.Entry = {
    token: Redacted.make("t"),
    lifetimeMillis: 60 * MINUTE,
    serverLifetimeMillis: 60 * MINUTE,
    serverClockSkewMillis: 1500
  }
  /** A stored token "f<generation>" (its fingerprint), and the lease's holder if any. */
  const snapshot = (
    stored: { generation: number; remainingMillis: number } | undefined,
    lease?: string
  ): TokenStore.Snapshot => ({
    stored: stored === undefined ? undefined : { entry, fingerprint: `f${stored.generation}`, ...stored },
    generation: stored?.generation ?? 0,
    lease
  })
  const fresh = snapshot({ generation: 3, remainingMillis: 40 * MINUTE })
  /** `found` with the token endpoint's pause recorded (and the lease's holder, if given). */
  const paused = (
    found: TokenStore.Snapshot,
    status: TokenStore.PauseStatus,
    remainingMillis: number,
    lease?: string
  ): TokenStore.Snapshot => ({ ...found, lease: lease ?? found.lease, paused: { status, remainingMillis } })

  const cases: ReadonlyArray<
    readonly [string, TokenStore.Snapshot, ReadonlyArray<string>, TokenSharing.Step<Redacted.Redacted<string>>]
  > = [
    ["nothing stored, lease free", snapshot(undefined), [], { _tag: "Lease" }],
    ["nothing stored, lease held", snapshot(undefined, "b"), [], { _tag: "Wait", holder: "b" }],
    ["a fresh token, none held", fresh, [], { _tag: "Adopt", issued: expect.objectContaining({ storeGeneration: 3 }) }],
    ["a fresh token, another held", fresh, ["f2"], { _tag: "Adopt", issued: expect.anything() }],
    ["the very token held", fresh, ["f3"], { _tag: "Lease" }],
    ["the very token just refused", fresh, ["f2", "f3"], { _tag: "Lease" }],
    ["the very token held, lease held", snapshot({ generation: 3, remainingMillis: 40 * MINUTE }, "b"), ["f3"], {
      _tag: "Wait",
      holder: "b"
    }],
    ["a token 1 ms outside its hard window", snapshot({ generation: 3, remainingMillis: 30 * SECOND + 1 }), ["f2"], {
      _tag: "Adopt",
      issued: expect.anything()
    }],
    ["a token at its hard window", snapshot({ generation: 3, remainingMillis: 30 * SECOND }), ["f2"], {
      _tag: "Lease"
    }],
    ["a token in its hard window, lease held", snapshot({ generation: 3, remainingMillis: SECOND }, "b"), ["f2"], {
      _tag: "Wait",
      holder: "b"
    }],
    ["nothing stored, the endpoint paused with 429", paused(snapshot(undefined), 429, 5 * SECOND), [], {
      _tag: "Paused",
      status: 429,
      remainingMillis: 5 * SECOND
    }],
    ["the very token held, paused with 503, lease held", paused(fresh, 503, SECOND, "b"), ["f3"], {
      _tag: "Paused",
      status: 503,
      remainingMillis: SECOND
    }],
    ["paused for longer than maxRetryAfter: the cap", paused(snapshot(undefined), 429, 2 * MINUTE), [], {
      _tag: "Paused",
      status: 429,
      remainingMillis: MINUTE
    }],
    ["a fresh token while paused: adopted, nothing asked", paused(fresh, 429, SECOND), ["f2"], {
      _tag: "Adopt",
      issued: expect.objectContaining({ storeGeneration: 3 })
    }]
  ]
  for (const [name, found, avoid, expected] of cases) {
    it(`${name}: ${expected._tag}`, () => {
      expect(TokenSharing.afterRead(found, avoid, 0, limits)).toEqual(expected)
    })
  }

  it("an adopted token expires when the store says, and its lifetime places its windows", () => {
    const issued = TokenSharing.adoptable(snapshot({ generation: 7, remainingMillis: 40 * MINUTE }), [], 1000, limits)
    expect(issued).toEqual({
      token: entry.token,
      sentAt: 1000 + 40 * MINUTE - 60 * MINUTE,
      lifetimeMillis: 60 * MINUTE,
      serverLifetimeMillis: 60 * MINUTE,
      serverClockSkewMillis: 1500,
      source: "store",
      storeGeneration: 7
    })
  })

  it("a stored lifetime over the cap is cut, and a time left over the lifetime is cut to it", () => {
    const capped = TokenSharing.adoptable(
      snapshot({ generation: 1, remainingMillis: 48 * 60 * MINUTE }),
      [],
      0,
      { ...limits, maxLifetimeMillis: 30 * MINUTE }
    )
    expect(capped).toMatchObject({ lifetimeMillis: 30 * MINUTE, sentAt: 0 })
  })

  it("the hard window of a short-lived stored token is a tenth of its lifetime", () => {
    const short = { ...entry, lifetimeMillis: 100 * SECOND, serverLifetimeMillis: 100 * SECOND }
    const found = (remainingMillis: number): TokenStore.Snapshot => ({
      stored: { entry: short, fingerprint: "f2", generation: 2, remainingMillis },
      generation: 2,
      lease: undefined
    })
    expect(TokenSharing.adoptable(found(10 * SECOND + 1), [], 0, limits)).toBeDefined()
    expect(TokenSharing.adoptable(found(10 * SECOND), [], 0, limits)).toBeUndefined()
  })

  it("a wait starts again when the lease changes hands, and ends after a whole lease with one holder", () => {
    expect(TokenSharing.waitStep(undefined, "b", 100, 1000)).toEqual({
      _tag: "Poll",
      waiting: { holder: "b", since: 100, churn: undefined }
    })
    const waiting = { holder: "b", since: 100, churn: undefined }
    expect(TokenSharing.waitStep(waiting, "b", 1099, 1000)).toEqual({ _tag: "Poll", waiting })
    expect(TokenSharing.waitStep(waiting, "b", 1100, 1000)).toEqual({ _tag: "AskAlone" })
    expect(TokenSharing.waitStep(waiting, "c", 5000, 1000)).toEqual({
      _tag: "Poll",
      waiting: { holder: "c", since: 5000, churn: { since: 5000, changes: 1 } }
    })
  })

  it("polls back off from 25 ms to 400 ms, half of each jittered", () => {
    expect([0, 1, 2, 3, 4, 5, 9].map((poll) => TokenSharing.pollDelayMillis(poll, 0))).toEqual([
      13,
      25,
      50,
      100,
      200,
      200,
      200
    ])
    expect(TokenSharing.pollDelayMillis(0, 0.999)).toBe(25)
    expect(TokenSharing.pollDelayMillis(9, 0.999)).toBe(400)
  })

  it("a lease outlasts the token request it covers, with the store's read and publication", () => {
    expect(TokenSharing.leaseMillis(10 * SECOND, 250)).toBe(11_500)
    expect(TokenSharing.leaseMillis(10 * SECOND, Number.POSITIVE_INFINITY)).toBe(11_000)
  })
})

describe("TokenStore.redis: options", () => {
  const redis = TokenStore.ioredis({ call: () => Promise.resolve(null) })
  const refusedOptions: ReadonlyArray<readonly [string, unknown, string]> = [
    ["no options", undefined, "tokenStore.options"],
    ["no port", {}, "tokenStore.redis"],
    ["a client instead of a port", { redis: { get: () => {} } }, "tokenStore.redis"],
    ["a prefix with a space", { redis, keyPrefix: "my app" }, "tokenStore.keyPrefix"],
    ["a sealing key of 16 bytes", { redis, sealingKey: Buffer.alloc(16).toString("base64") }, "tokenStore.sealingKey"],
    [
      "a sealing key that is a word",
      { redis, sealingKey: Redacted.make("correct horse battery staple") },
      "tokenStore.sealingKey"
    ],
    [
      "a sealing key that only looks like a Redacted (it holds nothing)",
      { redis, sealingKey: Object.create(Object.getPrototypeOf(Redacted.make("x"))) },
      "tokenStore.sealingKey"
    ],
    ["a zero timeout", { redis, timeout: 0 }, "tokenStore.timeout"],
    ["a timeout over a minute", { redis, timeout: "2 minutes" }, "tokenStore.timeout"],
    ["a retryAfter that is not a duration", { redis, retryAfter: "soon" }, "tokenStore.retryAfter"],
    ["an unknown onUnavailable", { redis, onUnavailable: "ignore" }, "tokenStore.onUnavailable"]
  ]
  for (const [name, options, setting] of refusedOptions) {
    it(`refuses ${name}, naming ${setting}, never echoing a key`, () => {
      const result = TokenStore.redis(options as TokenStore.RedisOptions)
      expect(result).toMatchObject({ _tag: "Left", left: { _tag: "InvalidConfig", setting } })
      expect(String((result as { left: unknown }).left)).not.toContain("horse")
    })
  }

  it.effect("the layer fails with the InvalidConfig", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Layer.build(TokenStore.layerRedis({ redis, timeout: -1 })))
      expect(error).toMatchObject({ _tag: "InvalidConfig", setting: "tokenStore.timeout" })
    }).pipe(Effect.scoped))

  it("a sealing key is 32 bytes, given as bytes, base64 (padded or url-safe) or hex, plain or redacted", () => {
    const bytes = Uint8Array.from({ length: 32 }, (_, i) => i * 7)
    const forms: ReadonlyArray<unknown> = [
      bytes,
      Redacted.make(bytes),
      Buffer.from(bytes).toString("base64"),
      Buffer.from(bytes).toString("base64url"),
      Redacted.make(Buffer.from(bytes).toString("hex").toUpperCase())
    ]
    for (const form of forms) {
      const key = StoredEntry.sealingKey(form)
      expect(key._tag).toBe("Right")
      expect([...Redacted.value((key as { right: StoredEntry.SealingKey }).right)]).toEqual([...bytes])
    }
    expect(StoredEntry.sealingKey(new Uint8Array(31))._tag).toBe("Left")
    expect(StoredEntry.sealingKey(42)._tag).toBe("Left")
  })

  it("an entry reads back as written, sealed or not; a seal is bound to its key name", () => {
    const entry: StoredEntry.Entry = {
      token: Redacted.make("abc.DEF/+="),
      lifetimeMillis: 3_600_000,
      serverLifetimeMillis: 7_200_000,
      serverClockSkewMillis: undefined
    }
    const key = Either.getOrThrow(StoredEntry.sealingKey(Keys.sealingKey(9)))
    const read = Either.right({ entry, fingerprint: TokenStore.fingerprint(entry.token) })
    expect(StoredEntry.decode(StoredEntry.encode(entry, undefined, "k"), undefined, "k")).toEqual(read)
    const sealed = StoredEntry.encode(entry, key, "k")
    expect(sealed).not.toContain("abc.DEF")
    expect(StoredEntry.decode(sealed, key, "k")).toEqual(read)
    // The same sealed value copied under another name does not open.
    expect(StoredEntry.decode(sealed, key, "other")._tag).toBe("Left")
    // Two seals of one entry differ (a fresh IV each time).
    expect(StoredEntry.encode(entry, key, "k")).not.toBe(sealed)
  })

  it("a stored entry with a zero, negative or infinite lifetime, or an infinite clock skew, is unreadable (issue 24's audit)", () => {
    const token = "abc.DEF"
    const stored = (fields: Record<string, string>) => {
      const json = `{"token":"${token}","lifetimeMillis":${fields.lifetime ?? "3600000"},` +
        `"serverLifetimeMillis":${fields.serverLifetime ?? "3600000"},"serverClockSkewMillis":${fields.skew ?? "null"}}`
      return `${TokenStore.fingerprint(Redacted.make(token))}|${json}`
    }
    expect(StoredEntry.decode(stored({}), undefined, "k")._tag).toBe("Right")
    // JSON has no Infinity, but 1e999 parses as it.
    for (const lifetime of ["0", "-1", "1e999"]) {
      expect(StoredEntry.decode(stored({ lifetime }), undefined, "k"), lifetime).toEqual(
        Either.left({ reason: "the stored token's lifetime is not a positive number", sealedOtherwise: false })
      )
      expect(StoredEntry.decode(stored({ serverLifetime: lifetime }), undefined, "k")._tag, lifetime).toBe("Left")
    }
    for (const skew of ["1e999", "-1e999", "\"5\""]) {
      expect(StoredEntry.decode(stored({ skew }), undefined, "k"), skew).toEqual(
        Either.left({ reason: "the stored token's clock skew is not a number", sealedOtherwise: false })
      )
    }
  })
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

describe("sealing keys too weak to seal with (issue 22)", () => {
  it("a key of one byte repeated, or of fewer than 16 different bytes, is refused without being echoed", () => {
    const weak: ReadonlyArray<readonly [string, unknown]> = [
      ["32 zero bytes", new Uint8Array(32)],
      ["64 zeros in hex", "0".repeat(64)],
      ["one base64 letter repeated", `${"A".repeat(43)}=`],
      ["one byte repeated, redacted", Redacted.make(Buffer.alloc(32, 7).toString("base64"))],
      ["15 different bytes", Uint8Array.from({ length: 32 }, (_, i) => i % 15)]
    ]
    const redis = TokenStore.ioredis({ call: () => Promise.resolve(null) })
    for (const [title, value] of weak) {
      const result = TokenStore.redis({ redis, sealingKey: value as string })
      expect(result, title).toMatchObject({
        _tag: "Left",
        left: { _tag: "InvalidConfig", setting: "tokenStore.sealingKey" }
      })
      const message = String((result as { left: unknown }).left)
      expect(message).toContain("openssl rand -base64 32")
      expect(message).not.toContain("AAAAAAAA")
      expect(message).not.toContain("00000000")
    }
    // 16 different bytes, and keys made as the docs say, are taken.
    expect(StoredEntry.sealingKey(Uint8Array.from({ length: 32 }, (_, i) => i % 16))._tag).toBe("Right")
    for (let i = 0; i < 100; i++) {
      expect(StoredEntry.sealingKey(Crypto.randomBytes(32).toString("base64"))._tag).toBe("Right")
    }
  })
})

describe("unit: what a read of something unreadable stands for (issue 22)", () => {
  const limits = { hardWindowMillis: 30 * SECOND, maxLifetimeMillis: 24 * 60 * MINUTE, maxPauseMillis: MINUTE }
  const snapshot = (sealedOtherwise: boolean, remainingMillis: number): TokenStore.Snapshot => ({
    stored: undefined,
    generation: 3,
    lease: undefined,
    unreadable: { reason: "why", sealedOtherwise, remainingMillis }
  })

  it("another key's token with no more time than a token could have is a failure of the store (left to them)", () => {
    expect(TokenSharing.unreadableFailure(snapshot(true, 60 * MINUTE), limits)).toMatchObject({
      _tag: "TokenStoreError",
      reason: "Unreadable",
      detail: "why"
    })
    expect(TokenSharing.unreadableFailure(snapshot(true, limits.maxLifetimeMillis), limits)).toBeDefined()
  })

  it("anything else is no one's: no failure, and the next publication replaces it", () => {
    expect(TokenSharing.unreadableFailure(snapshot(true, limits.maxLifetimeMillis + 1), limits)).toBeUndefined()
    expect(TokenSharing.unreadableFailure(snapshot(false, 60 * MINUTE), limits)).toBeUndefined()
    expect(TokenSharing.unreadableFailure(snapshot(true, Infinity), limits)).toBeUndefined()
    expect(TokenSharing.unreadableFailure({ stored: undefined, generation: 0, lease: undefined }, limits))
      .toBeUndefined()
  })
})

describe("a Redis client still making its first connection (issue 23)", () => {
  it("is waited for until ready, error or end; then never again; no listener is left", async () => {
    const { EventEmitter } = await import("node:events")
    for (const event of ["ready", "error", "end"]) {
      const client = Object.assign(new EventEmitter(), { status: "connecting" })
      const ready = firstConnection(client, () => client.status !== "ready")
      let settled = false
      const waiting = ready().then(() => (settled = true))
      await new Promise((resolve) => setTimeout(resolve, 20))
      expect(settled, event).toBe(false)
      if (event === "ready") client.status = "ready"
      client.emit(event, new Error("refused"))
      await waiting
      expect(["ready", "error", "end"].map((name) => client.listenerCount(name))).toEqual([0, 0, 0])
    }
    // Ready once: a later loss of the connection is an outage, not waited for.
    const client = Object.assign(new EventEmitter(), { status: "ready" })
    const ready = firstConnection(client, () => client.status !== "ready")
    await ready()
    client.status = "reconnecting"
    let settled = false
    await Promise.race([ready().then(() => (settled = true)), new Promise((resolve) => setTimeout(resolve, 20))])
    expect(settled).toBe(true)
  })
})

describe("a stored entry read back: each way it can be unreadable, by its reason (issue 24's mutation run)", () => {
  const token = "abc.DEF"
  const json = (fields: Record<string, unknown> = {}) =>
    JSON.stringify({
      token,
      lifetimeMillis: 3_600_000,
      serverLifetimeMillis: 3_600_000,
      serverClockSkewMillis: null,
      ...fields
    })
  const print = TokenStore.fingerprint(Redacted.make(token))
  const key = Either.getOrThrow(StoredEntry.sealingKey(Keys.sealingKey(3)))
  const otherKey = Either.getOrThrow(StoredEntry.sealingKey(Keys.sealingKey(4)))
  const sealed = StoredEntry.encode(
    { token: Redacted.make(token), lifetimeMillis: 1000, serverLifetimeMillis: 1000, serverClockSkewMillis: undefined },
    key,
    "k"
  )
  const sealedBody = sealed.slice(sealed.indexOf("|") + 1)
  const reasonOf = (text: string, sealingKey: StoredEntry.SealingKey | undefined = undefined) =>
    Either.match(StoredEntry.decode(text, sealingKey, "k"), {
      onLeft: (unreadable) => `${unreadable.sealedOtherwise ? "sealed otherwise: " : ""}${unreadable.reason}`,
      onRight: () => "read"
    })
  /** A seal of `bytes` bytes after the prefix. */
  const sealOf = (bytes: number) => `sealed:v1:${Crypto.randomBytes(bytes).toString("base64")}`

  it.each(
    [
      ["as written", `${print}|${json()}`, undefined, "read"],
      [
        "exactly as long as the longest",
        `${print}|${json()}`.padEnd(StoredEntry.MAX_STORED_LENGTH, " "),
        undefined,
        "read"
      ],
      [
        "one character longer",
        `${print}|${json()}`.padEnd(StoredEntry.MAX_STORED_LENGTH + 1, " "),
        undefined,
        "the stored token is longer than any token"
      ],
      ["no bar", json(), undefined, "the stored token has no fingerprint"],
      ["a fingerprint without its bar", `${print}x`, undefined, "the stored token has no fingerprint"],
      ["a fingerprint one short", `${print.slice(1)}|${json()}`, undefined, "the stored token has no fingerprint"],
      [
        "a fingerprint in upper case",
        `${print.toUpperCase()}|${json()}`,
        undefined,
        "the stored token has no fingerprint"
      ],
      [
        "another token's fingerprint",
        `${"0".repeat(32)}|${json()}`,
        undefined,
        "the stored token's fingerprint is not its own"
      ],
      [
        "sealed, read without a key",
        sealed,
        undefined,
        "sealed otherwise: the stored token is sealed, and this instance has no sealing key"
      ],
      [
        "sealed with another key",
        sealed,
        otherKey,
        "sealed otherwise: the stored token's seal does not open with this key (another sealing key, or tampered)"
      ],
      ["sealed, read with its key", sealed, key, "read"],
      [
        "in the clear, read by an instance that seals",
        `${print}|${json()}`,
        key,
        "the stored token is not sealed, and this instance seals"
      ],
      ["a seal no longer than its IV and tag", `${print}|${sealOf(28)}`, key, "the stored token's seal is cut short"],
      [
        "a seal one byte longer",
        `${print}|${sealOf(29)}`,
        key,
        "sealed otherwise: the stored token's seal does not open with this key (another sealing key, or tampered)"
      ],
      ["not JSON", `${print}|{token`, undefined, "the stored token is not JSON"],
      ["JSON null", `${print}|null`, undefined, "the stored token is not a JSON object"],
      ["a JSON number", `${print}|5`, undefined, "the stored token is not a JSON object"],
      [
        "a token with a line break",
        `${print}|${json({ token: "abc\r\nX-Evil: 1" })}`,
        undefined,
        "the stored token is not header-safe"
      ],
      [
        "a lifetime as text",
        `${print}|${json({ lifetimeMillis: "3600000" })}`,
        undefined,
        "the stored token's lifetime is not a positive number"
      ],
      ["the largest safe lifetime", `${print}|${json({ lifetimeMillis: Number.MAX_SAFE_INTEGER })}`, undefined, "read"],
      [
        "a lifetime past the safe integers",
        `${print}|${json({ lifetimeMillis: 2 ** 60 })}`,
        undefined,
        "the stored token's lifetime is not a positive number"
      ],
      [
        "no clock skew at all",
        `${print}|${JSON.stringify({ token, lifetimeMillis: 1, serverLifetimeMillis: 1 })}`,
        undefined,
        "read"
      ]
    ] as const
  )("%s", (_, text, sealingKey, expected) => {
    expect(reasonOf(text, sealingKey)).toBe(expected)
  })

  it("the fields read back are the stored ones, a skew of 0 included", () => {
    const read = StoredEntry.decode(`${print}|${json({ serverClockSkewMillis: 0, lifetimeMillis: 5 })}`, undefined, "k")
    expect(Either.map(read, ({ entry }) => [entry.lifetimeMillis, entry.serverClockSkewMillis])).toEqual(
      Either.right([5, 0])
    )
    const opened = StoredEntry.decode(sealed, key, "k")
    expect(Either.map(opened, ({ entry }) => Redacted.value(entry.token))).toEqual(Either.right(token))
    expect(sealedBody.startsWith("sealed:v1:")).toBe(true)
  })

  it.each(
    [
      ["base64 with blanks around it", ` ${Keys.sealingKey(5).toString("base64")}\n`, true],
      ["hex", Keys.sealingKey(5).toString("hex"), true],
      ["hex with two more characters", `${Keys.sealingKey(5).toString("hex")}zz`, false],
      ["hex after one more hex digit", `0${Keys.sealingKey(5).toString("hex")}`, false],
      ["hex after two other characters", `zz${Keys.sealingKey(5).toString("hex")}`, false],
      ["base64 after two other characters", `!!${Keys.sealingKey(5).toString("base64")}`, false],
      ["base64 with two more characters", `${Keys.sealingKey(5).toString("base64")}!!`, false],
      ["43 characters and one that is not base64", `${Keys.sealingKey(5).toString("base64").slice(0, 43)}!`, false],
      ["31 different bytes", Uint8Array.from({ length: 31 }, (_, i) => i), false],
      ["33 different bytes", Uint8Array.from({ length: 33 }, (_, i) => i), false]
    ] as const
  )("a sealing key given as %s", (_, value, taken) => {
    const read = StoredEntry.sealingKey(value)
    expect(Either.isRight(read)).toBe(taken)
    if (!taken && Either.isLeft(read)) {
      expect(read.left).toBe(
        "must be 32 bytes: a Uint8Array, or their base64 (44 characters) or hex (64 characters)"
      )
    }
  })
})

describe("token sharing's steps, each observed (issue 24's mutation run)", () => {
  /** Log entries, as message and annotations, from every fiber of the test (the refresh fibers included). */
  const capturedLogs = () => {
    const entries: Array<{ readonly message: string; readonly annotations: Record<string, unknown> }> = []
    const layer = Logger.replace(
      Logger.defaultLogger,
      Logger.make(({ annotations, message }) => {
        entries.push({
          message: String(Array.isArray(message) ? message.join(" ") : message),
          annotations: Object.fromEntries(HashMap.toEntries(annotations))
        })
      })
    )
    return { entries, layer }
  }

  it.scoped("the lease taken, the second read finds a token another instance just published: it is adopted, nothing requested", () =>
    Effect.gen(function*() {
      const fake = yield* Fake.make()
      const shared = TokenStore.memory()
      const racing: TokenStore.Service = {
        ...shared,
        // Someone publishes between this instance's first read and its lease.
        acquireLease: (key, owner, ttl) =>
          Effect.zipRight(
            shared.publish(key, 0, entryOf("published.by.other"), 60 * MINUTE, "other"),
            shared.acquireLease(key, owner, ttl)
          )
      }
      const a = yield* instance(clientOver(fake, racing))
      const adoptedBefore = (yield* Metric.value(Telemetry.tokensFromStore)).count
      const token = yield* a(TokenService.get)
      expect((yield* Metric.value(Telemetry.tokensFromStore)).count).toBe(adoptedBefore + 1)
      expect(valueOf(token)).toBe("published.by.other")
      expect(token).toMatchObject({ source: "store", storeGeneration: 1 })
      expect(yield* fake.tokenRequests).toHaveLength(0)
      // The lease went back at once.
      expect((yield* shared.read(storeKey)).lease).toBeUndefined()
    }))

  it.scoped(
    "one holder keeps the lease a whole lease's length without publishing: the instance asks alone and offers its token",
    () =>
      Effect.gen(function*() {
        const { fake, shared } = yield* stuckHolder
        const a = yield* instance(clientOver(fake, shared))
        const caller = yield* Effect.fork(a(TokenService.get))
        yield* runClock(20, 100)
        expect(yield* fake.tokenRequests).toHaveLength(0)
        yield* runClock(200, 100)
        const token = yield* Fiber.join(caller)
        expect(yield* fake.tokenRequests).toHaveLength(1)
        expect(token.source).toBe("server")
        // Offered: the fleet can take it, though the stuck holder never gave the lease back.
        const snapshot = yield* shared.read(storeKey)
        expect(snapshot.stored?.generation).toBe(1)
        expect(Redacted.value(snapshot.stored!.entry.token)).toBe(valueOf(token))
      }),
    CPU_BOUND_MILLIS
  )

  it.scoped("a publication that fails still gives the lease back, though the store is then left alone", () =>
    Effect.gen(function*() {
      const fake = yield* Fake.make()
      const shared = TokenStore.memory()
      const failing: TokenStore.Service = { ...publishFailing(shared), retryAfterMillis: 5 * SECOND }
      const a = yield* instance(clientOver(fake, failing))
      const token = yield* a(TokenService.get)
      expect(token).toMatchObject({ source: "server", storeGeneration: undefined })
      yield* runClock(2, 100)
      expect((yield* shared.read(storeKey)).lease).toBeUndefined()
    }))

  it.scoped(
    "a holder stuck a whole lease, then the offer of this instance's token fails: the token is still used",
    () =>
      Effect.gen(function*() {
        const { fake, shared } = yield* stuckHolder
        const failing = publishFailing(shared)
        const a = yield* instance(clientOver(fake, failing))
        const caller = yield* Effect.fork(a(TokenService.get))
        yield* runClock(220, 100)
        const token = yield* Fiber.join(caller)
        expect(token).toMatchObject({ source: "server", storeGeneration: undefined })
        expect(yield* fake.tokenRequests).toHaveLength(1)
      }),
    CPU_BOUND_MILLIS
  )

  it.scoped("fail: a lease taken by a command that timed out is given back, and the refresh fails", () =>
    Effect.gen(function*() {
      const fake = yield* Fake.make()
      const shared = TokenStore.memory()
      const slow: TokenStore.Service = {
        ...shared,
        onUnavailable: "fail",
        timeoutMillis: 250,
        retryAfterMillis: 5 * SECOND,
        acquireLease: (...args) => Effect.zipRight(shared.acquireLease(...args), Effect.never)
      }
      const a = yield* instance(clientOver(fake, slow))
      const refresh = yield* Effect.fork(a(TokenService.get))
      yield* runClock(5, 100)
      expect(yield* Effect.flip(Fiber.join(refresh))).toMatchObject({ _tag: "TokenStoreError", reason: "Timeout" })
      expect((yield* shared.read(storeKey)).lease).toBeUndefined()
      expect(yield* fake.tokenRequests).toHaveLength(0)
    }))

  it.scoped("a token sealed with another key, with time left, fail-closed: an Unreadable error of the token operation", () =>
    Effect.gen(function*() {
      const fake = yield* Fake.make()
      const shared = TokenStore.memory()
      const sealedOtherwise: TokenStore.Service = {
        ...shared,
        onUnavailable: "fail",
        read: (key) =>
          Effect.map(shared.read(key), (snapshot) => ({
            ...snapshot,
            unreadable: { reason: "sealed with another key", sealedOtherwise: true, remainingMillis: 1000 }
          }))
      }
      const a = yield* instance(clientOver(fake, sealedOtherwise))
      expect(yield* Effect.flip(a(TokenService.get))).toMatchObject({
        _tag: "TokenStoreError",
        operation: "token",
        reason: "Unreadable",
        detail: "sealed with another key"
      })
      expect(yield* fake.tokenRequests).toHaveLength(0)
    }))

  it.scoped("a store client still making its first connection is waited for before its first read", () =>
    Effect.gen(function*() {
      const fake = yield* Fake.make()
      const shared = TokenStore.memory()
      const connected = yield* Deferred.make<void>()
      let isConnected = false
      const connecting: TokenStore.Service = {
        ...shared,
        ready: Deferred.await(connected),
        // Decided when the read runs, not when it is built.
        read: (key) =>
          Effect.suspend(() =>
            isConnected
              ? shared.read(key)
              : Effect.fail(
                new ClinicalError.TokenStoreError({
                  operation: "token",
                  reason: "Unavailable",
                  detail: "not connected"
                })
              )
          )
      }
      const a = yield* instance(clientOver(fake, connecting))
      const caller = yield* Effect.fork(a(TokenService.get))
      yield* runClock(5, 100)
      expect(yield* fake.tokenRequests).toHaveLength(0)
      isConnected = true
      yield* Deferred.succeed(connected, undefined)
      const token = yield* Fiber.join(caller)
      // Read once connected, then leased, requested and published: the fleet's token, not one of its own.
      expect(token).toMatchObject({ source: "server", storeGeneration: 1 })
    }))

  it.scoped("a store that does not answer, fail-closed: a Timeout naming the wait, said once; then Unavailable while it is left alone", () => {
    const { entries, layer } = capturedLogs()
    return Effect.gen(function*() {
      const fake = yield* Fake.make()
      const silent: TokenStore.Service = {
        ...TokenStore.memory(),
        onUnavailable: "fail",
        timeoutMillis: 200,
        retryAfterMillis: 5 * SECOND,
        read: () => Effect.never
      }
      const a = yield* instance(clientOver(fake, silent))
      const first = yield* Effect.fork(Effect.flip(a(TokenService.get)))
      yield* runClock(3, 100)
      expect(yield* Fiber.join(first)).toMatchObject({
        _tag: "TokenStoreError",
        operation: "token",
        reason: "Timeout",
        detail: "no answer within 200 ms"
      })
      expect(yield* Effect.flip(a(TokenService.get))).toMatchObject({
        _tag: "TokenStoreError",
        operation: "token",
        reason: "Unavailable",
        detail: "left alone for 5000 ms after a failure"
      })
      const said = entries.filter((entry) => entry.message.startsWith("token store unavailable"))
      expect(said).toEqual([{
        message: "token store unavailable; token refreshes fail until it is back",
        annotations: expect.objectContaining({ reason: "Timeout", detail: "no answer within 200 ms" })
      }])
      expect(yield* fake.tokenRequests).toHaveLength(0)
    }).pipe(Effect.provide(layer))
  })

  it.scoped("what the store holds that no instance can read is replaced by the leaseholder, which says so with the reason", () => {
    const { entries, layer } = capturedLogs()
    return Effect.gen(function*() {
      const fake = yield* Fake.make()
      const shared = TokenStore.memory()
      const planted: TokenStore.Service = {
        ...shared,
        read: (key) =>
          Effect.map(shared.read(key), (snapshot) =>
            snapshot.generation > 0 ? snapshot : {
              ...snapshot,
              unreadable: { reason: "planted for the test", sealedOtherwise: false, remainingMillis: Infinity }
            })
      }
      const a = yield* instance(clientOver(fake, planted))
      const repairsBefore = (yield* Metric.value(Telemetry.tokenStoreRepairs)).count
      const token = yield* a(TokenService.get)
      expect((yield* Metric.value(Telemetry.tokenStoreRepairs)).count).toBe(repairsBefore + 1)
      expect(token).toMatchObject({ source: "server", storeGeneration: 1 })
      expect(entries.filter((entry) => entry.message.includes("no instance can read"))).toEqual([{
        message: "token store holds a value no instance can read; this instance replaces it",
        annotations: expect.objectContaining({ reason: "planted for the test" })
      }])
      expect(entries.some((entry) => entry.message.startsWith("token store unavailable"))).toBe(false)
    }).pipe(Effect.provide(layer))
  })
})

describe("the Redis store's replies read, and its scripts sent (issue 24's mutation run)", () => {
  const token = "abc.DEF"
  const entry = entryOf(token)
  const value = StoredEntry.encode(entry, undefined, "k")
  const read = (reply: unknown) =>
    Either.match(RedisTokenStore.snapshotOf(reply, undefined, "k"), {
      onLeft: (error) => `${error.operation} ${error.reason}: ${error.detail}`,
      onRight: (snapshot) => ({
        generation: snapshot.generation,
        lease: snapshot.lease,
        stored: snapshot.stored === undefined
          ? undefined
          : [snapshot.stored.generation, snapshot.stored.remainingMillis],
        unreadable: snapshot.unreadable?.reason,
        paused: snapshot.paused
      })
    })

  it.each(
    [
      ["a token, its TTL, its generation and no lease", [value, 5000, "3", null, null, -2], {
        generation: 3,
        lease: undefined,
        stored: [3, 5000],
        unreadable: undefined
      }],
      ["the TTL as text, the generation as an integer, a lease", [value, "5000", 3, "owner-1", null, -2], {
        generation: 3,
        lease: "owner-1",
        stored: [3, 5000],
        unreadable: undefined
      }],
      ["nothing stored yet", [null, -2, null, null, null, -2], {
        generation: 0,
        lease: undefined,
        stored: undefined,
        unreadable: undefined
      }],
      ["a value without a TTL (written by hand)", [value, -1, "2", null, null, -2], {
        generation: 2,
        lease: undefined,
        stored: undefined,
        unreadable: undefined
      }],
      ["a TTL of 0", [value, 0, "2", null, null, -2], {
        generation: 2,
        lease: undefined,
        stored: undefined,
        unreadable: undefined
      }],
      ["a value that is not text", [5, 5000, "2", null, null, -2], {
        generation: 2,
        lease: undefined,
        stored: undefined,
        unreadable: undefined
      }],
      ["generation 0 as text", [null, -2, "0", null, null, -2], {
        generation: 0,
        lease: undefined,
        stored: undefined,
        unreadable: undefined
      }],
      ...(["-1", "1.5", "x1", "1x", "1234567890123456", ""] as const).map((generation) =>
        [`a generation of ${JSON.stringify(generation)}`, [value, 5000, generation, null, null, -2], {
          generation: -1,
          lease: undefined,
          stored: undefined,
          unreadable: "the stored generation is not a number"
        }] as const
      ),
      ["a negative integer generation", [value, 5000, -4, null, null, -2], {
        generation: -1,
        lease: undefined,
        stored: undefined,
        unreadable: "the stored generation is not a number"
      }],
      ["a value no instance wrote", ["planted", 5000, "1", null, null, -2], {
        generation: 1,
        lease: undefined,
        stored: undefined,
        unreadable: "the stored token has no fingerprint"
      }],
      ["a generation of two digits", [value, 5000, "12", null, null, -2], {
        generation: 12,
        lease: undefined,
        stored: [12, 5000],
        unreadable: undefined
      }],
      ["a generation in a list", [value, 5000, [5], null, null, -2], {
        generation: -1,
        lease: undefined,
        stored: undefined,
        unreadable: "the stored generation is not a number"
      }],
      ["a generation a client gives as undefined", [null, -2, undefined, null, null, -2], {
        generation: 0,
        lease: undefined,
        stored: undefined,
        unreadable: undefined
      }],
      ["three items", [value, 5000, "1"], "token Unreadable: the store's reply is not the expected list"],
      ["a pause of 429 with its TTL", [value, 5000, "3", null, "429", 3000], {
        generation: 3,
        lease: undefined,
        stored: [3, 5000],
        unreadable: undefined,
        paused: { status: 429, remainingMillis: 3000 }
      }],
      ["a pause of 503, its TTL as text, beside a generation no instance can read", [
        null,
        -2,
        "x",
        null,
        "503",
        "2500"
      ], {
        generation: -1,
        lease: undefined,
        stored: undefined,
        unreadable: "the stored generation is not a number",
        paused: { status: 503, remainingMillis: 2500 }
      }],
      ...([["429", -1], ["429", 0], ["500", 3000], ["", 3000], [429, 3000], [null, 3000]] as const).map((
        [pause, ttl]
      ) =>
        [`a pause of ${JSON.stringify(pause)} with a TTL of ${ttl}: none`, [null, -2, "1", null, pause, ttl], {
          generation: 1,
          lease: undefined,
          stored: undefined,
          unreadable: undefined,
          paused: undefined
        }] as const
      ),
      [
        "four items (no pause)",
        [value, 5000, "1", null],
        "token Unreadable: the store's reply is not the expected list"
      ],
      [
        "seven items",
        [value, 5000, "1", null, null, -2, null],
        "token Unreadable: the store's reply is not the expected list"
      ],
      ["not a list", "OK", "token Unreadable: the store's reply is not the expected list"]
    ] as const
  )("a READ reply of %s", (_, reply, expected) => {
    expect(read(reply)).toEqual(expected)
  })

  /** A Redis port over a send function that answers from `answer`, recording each command. */
  const port = (answer: (command: ReadonlyArray<string>) => unknown) => {
    const sent: Array<ReadonlyArray<string>> = []
    const commands = RedisTokenStore.fromSend(async (command) => {
      sent.push(command)
      const reply = answer(command)
      if (reply instanceof Error) throw reply
      return reply
    })
    return { commands, sent }
  }
  const settings = {
    keyPrefix: "p",
    sealingKey: undefined,
    timeoutMillis: 1000,
    retryAfterMillis: 1000,
    onUnavailable: "local"
  } as const

  it("a script is sent by its SHA-1, and by its source only when Redis answers NOSCRIPT", async () => {
    const script = RedisTokenStore.redisScript("return 1")
    const missing = port((command) => (command[0] === "EVALSHA" ? new Error("NOSCRIPT No matching script") : 1))
    expect(await missing.commands.script(script, ["k"], ["a"])).toBe(1)
    expect(missing.sent).toEqual([["EVALSHA", script.sha1, "1", "k", "a"], ["EVAL", "return 1", "1", "k", "a"]])
    // Any other failure is the call's: not sent again.
    const down = port(() => new Error("ECONNRESET"))
    await expect(down.commands.script(script, ["k"], [])).rejects.toThrow("ECONNRESET")
    expect(down.sent).toHaveLength(1)
    const odd = port(() => "NOSCRIPT as a reply, not an error")
    expect(await odd.commands.script(script, [], [])).toBe("NOSCRIPT as a reply, not an error")
    const thrownText = RedisTokenStore.fromSend(() => Promise.reject("NOSCRIPT but a string"))
    await expect(thrownText.script(script, [], [])).rejects.toBe("NOSCRIPT but a string")
    const thrownNull = RedisTokenStore.fromSend(() => Promise.reject(null))
    await expect(thrownNull.script(script, [], [])).rejects.toBe(null)
    // Redis knows a script by the hex SHA-1 of its source.
    expect(script.sha1).toBe("e0e1f9fabfc9d4800c877a703b823ac0578ff8db")
  })

  it.effect("a client that says when it is connected is waited for through the store's ready; one that does not, not", () =>
    Effect.gen(function*() {
      let connected = false
      const { commands } = port(() => 1)
      const waiting = RedisTokenStore.make({
        ...commands,
        ready: () => new Promise<void>((resolve) => setTimeout(() => resolve(void (connected = true)), 10))
      }, settings)
      yield* waiting.ready!
      expect(connected).toBe(true)
      expect(RedisTokenStore.make(commands, settings).ready).toBeUndefined()
    }))

  it.effect("a lease is given back with its owner named (the script releases only the owner's)", () =>
    Effect.gen(function*() {
      const { commands, sent } = port(() => 1)
      yield* RedisTokenStore.make(commands, settings).releaseLease("key", "owner-7")
      expect(sent[0]!.slice(2)).toEqual(["1", "p:{key}:lease", "owner-7"])
    }))

  it.effect("a publication's reply: published, lost, or not what a publication answers", () =>
    Effect.gen(function*() {
      const publishWith = (reply: unknown) =>
        Effect.either(RedisTokenStore.make(port(() => reply).commands, settings).publish("key", 2, entry, 1000, "me"))
      expect(yield* publishWith([1, "3"])).toEqual(Either.right(3))
      expect(yield* publishWith([0, 5])).toEqual(Either.right(undefined))
      for (const reply of [[1], [1, "3", "x"], "OK", null]) {
        expect(yield* publishWith(reply)).toMatchObject(Either.left({
          operation: "token",
          reason: "Unreadable",
          detail: "the store's reply to a publication is not the expected list"
        }))
      }
      expect(yield* publishWith([1, "three"])).toMatchObject(Either.left({
        reason: "Unreadable",
        detail: "the stored generation is not a number"
      }))
      // What went out: the keys of this client, the value, the TTL rounded up and the owner.
      const { commands, sent } = port(() => [1, "3"])
      yield* RedisTokenStore.make(commands, settings).publish("key", 2, entry, 999.5, "me")
      expect(sent[0]!.slice(2)).toEqual([
        "3",
        "p:{key}:token",
        "p:{key}:generation",
        "p:{key}:lease",
        "2",
        expect.stringMatching(/^[0-9a-f]{32}\|\{"token":"abc\.DEF"/),
        "1000",
        "me"
      ])
    }))

  it.effect("a client's failure is Unavailable, its text scrubbed of what the command carried", () =>
    Effect.gen(function*() {
      const echo = port((command) => new Error(`ERR in ${command.join(" ")}`))
      const error = yield* Effect.flip(
        RedisTokenStore.make(echo.commands, settings).publish("key", 0, entry, 1000, "me")
      )
      expect(error).toMatchObject({ operation: "token", reason: "Unavailable" })
      expect(error.detail).not.toContain(token)
      const odd = RedisTokenStore.make(RedisTokenStore.fromSend(() => Promise.reject(42)), settings)
      expect(yield* Effect.flip(odd.read("key"))).toMatchObject({ detail: "the Redis client failed" })
      const text = RedisTokenStore.make(RedisTokenStore.fromSend(() => Promise.reject("refused")), settings)
      expect(yield* Effect.flip(text.read("key"))).toMatchObject({ detail: "refused" })
    }))
})
