/**
 * The token store's protocol, with clients of one process sharing an in-memory store under
 * `TestClock`: what a fleet does through Redis (test/RedisTokenStore.test.ts and
 * test/Fleet.test.ts run it on a real one), here deterministic. This part: one token request for
 * the fleet, adoption and revocation, and what review found (leases changing hands, stores timing
 * out, stores restarting empty).
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Redacted, TestClock } from "effect"
import { MedicationService, TokenService, TokenStore } from "effect-clinical"
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
  twoInstances,
  valueOf
} from "./support/tokenStoreFixtures.js"

/** A token responder that waits for `gate` before the fake issues the token. */
const gated = (fake: Fake.FakeService, gate: Deferred.Deferred<void>): Fake.Responder => () =>
  Effect.zipRight(Deferred.await(gate), fake.issueToken)

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
