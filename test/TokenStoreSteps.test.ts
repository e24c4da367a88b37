/**
 * Token sharing's steps, each observed through a store that races, sticks, fails or cannot be read
 * (issue 24's mutation run), under `TestClock`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, HashMap, Logger, Metric, Redacted } from "effect"
import { ClinicalError, TokenService, TokenStore } from "effect-clinical"
import * as Telemetry from "../src/internal/observability/telemetry.js"
import * as Fake from "./support/FakeService.js"
import {
  clientOver,
  CPU_BOUND_MILLIS,
  entryOf,
  instance,
  MINUTE,
  runClock,
  SECOND,
  storeKey,
  stuckHolder,
  valueOf
} from "./support/tokenStoreFixtures.js"

/** `store`, but every publication times out. */
const publishFailing = (store: TokenStore.Service): TokenStore.Service => ({
  ...store,
  publish: () =>
    Effect.fail(new ClinicalError.TokenStoreError({ operation: "token", reason: "Timeout", detail: "lost" }))
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
