/**
 * The token store's protocol, with clients of one process sharing an in-memory store under
 * `TestClock`: what a fleet does through Redis (test/RedisTokenStore.test.ts and
 * test/Fleet.test.ts run it on a real one), here deterministic.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Either, Fiber, Layer, Metric, Redacted, TestClock } from "effect"
import { type ClinicalClient, ClinicalError, MedicationService, TokenService, TokenStore } from "effect-clinical"
import * as StoredEntry from "../src/internal/storedEntry.js"
import * as Telemetry from "../src/internal/telemetry.js"
import * as TokenSharing from "../src/internal/tokenSharing.js"
import * as Fake from "./support/FakeService.js"
import * as Leaks from "./support/Leaks.js"

const SECOND = 1000
const MINUTE = 60 * SECOND

type Client = Layer.Layer<ClinicalClient.Services, unknown>

/** A client over `fake` whose token store is `store` (shared with any other client given it). */
const clientOver = (fake: Fake.FakeService, store: TokenStore.Service, overrides = {}): Client =>
  Fake.clientLayer(fake, overrides).pipe(Layer.provide(Layer.succeed(TokenStore.TokenStore, store)))

/** Builds `client` once and returns a runner of effects against that one instance. */
const instance = (client: Client) =>
  Effect.map(
    Layer.build(client),
    (context) => <A, E>(effect: Effect.Effect<A, E, ClinicalClient.Services>) => Effect.provide(effect, context)
  )

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

describe("clients sharing a token store", () => {
  it.scoped("on a cold store, many callers of two instances make one token request", () =>
    Effect.gen(function*() {
      const fake = yield* Fake.make()
      const store = TokenStore.memory()
      const a = yield* instance(clientOver(fake, store))
      const b = yield* instance(clientOver(fake, store))
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
      const fake = yield* Fake.make()
      const store = TokenStore.memory()
      const a = yield* instance(clientOver(fake, store))
      const b = yield* instance(clientOver(fake, store))
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
      const fake = yield* Fake.make()
      const store = TokenStore.memory()
      const a = yield* instance(clientOver(fake, store))
      const b = yield* instance(clientOver(fake, store))
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
      expect((yield* shared.read(storeKey)).leased).toBe(true)
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
      const { store } = brokenStore("fail", refused)
      const client = yield* instance(clientOver(fake, store))
      const exit = yield* Effect.exit(client(TokenService.get))
      expect(exit).toMatchObject({
        _tag: "Failure",
        cause: { error: { _tag: "TokenStoreError", reason: "Unavailable" } }
      })
      expect(yield* fake.tokenRequests).toHaveLength(0)
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
  const limits: TokenSharing.Limits = { hardWindowMillis: 30 * SECOND, maxLifetimeMillis: 24 * 60 * MINUTE }
  const entry: StoredEntry.Entry = {
    token: Redacted.make("t"),
    lifetimeMillis: 60 * MINUTE,
    serverLifetimeMillis: 60 * MINUTE,
    serverClockSkewMillis: 1500
  }
  const snapshot = (stored: { generation: number; remainingMillis: number } | undefined, leased = false) => ({
    stored: stored === undefined ? undefined : { entry, ...stored },
    generation: stored?.generation ?? 0,
    leased
  })

  const cases: ReadonlyArray<readonly [string, TokenStore.Snapshot, number | undefined, TokenSharing.Step["_tag"]]> = [
    ["nothing stored, lease free", snapshot(undefined), undefined, "Lease"],
    ["nothing stored, lease held", snapshot(undefined, true), undefined, "Wait"],
    ["a fresh token, none held", snapshot({ generation: 3, remainingMillis: 40 * MINUTE }), undefined, "Adopt"],
    ["a fresh token, an older one held", snapshot({ generation: 3, remainingMillis: 40 * MINUTE }), 2, "Adopt"],
    ["the very token held", snapshot({ generation: 3, remainingMillis: 40 * MINUTE }), 3, "Lease"],
    ["the very token held, lease held", snapshot({ generation: 3, remainingMillis: 40 * MINUTE }, true), 3, "Wait"],
    ["a token 1 ms outside its hard window", snapshot({ generation: 3, remainingMillis: 30 * SECOND + 1 }), 2, "Adopt"],
    ["a token at its hard window", snapshot({ generation: 3, remainingMillis: 30 * SECOND }), 2, "Lease"],
    ["a token in its hard window, lease held", snapshot({ generation: 3, remainingMillis: SECOND }, true), 2, "Wait"]
  ]
  for (const [name, found, held, expected] of cases) {
    it(`${name}: ${expected}`, () => {
      expect(TokenSharing.afterRead(found, held, 0, limits)._tag).toBe(expected)
    })
  }

  it("an adopted token expires when the store says, and its lifetime places its windows", () => {
    const issued = TokenSharing.adoptable(
      snapshot({ generation: 7, remainingMillis: 40 * MINUTE }),
      undefined,
      1000,
      limits
    )
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
      undefined,
      0,
      { ...limits, maxLifetimeMillis: 30 * MINUTE }
    )
    expect(capped).toMatchObject({ lifetimeMillis: 30 * MINUTE, sentAt: 0 })
  })

  it("the hard window of a short-lived stored token is a tenth of its lifetime", () => {
    const short = { ...entry, lifetimeMillis: 100 * SECOND, serverLifetimeMillis: 100 * SECOND }
    const found = (remainingMillis: number) => ({
      stored: { entry: short, generation: 2, remainingMillis },
      generation: 2,
      leased: false
    })
    expect(TokenSharing.adoptable(found(10 * SECOND + 1), 1, 0, limits)).toBeDefined()
    expect(TokenSharing.adoptable(found(10 * SECOND), 1, 0, limits)).toBeUndefined()
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
    const key = Either.getOrThrow(StoredEntry.sealingKey(new Uint8Array(32).fill(9)))
    expect(StoredEntry.decode(StoredEntry.encode(entry, undefined, "k"), undefined, "k")).toEqual(Either.right(entry))
    const sealed = StoredEntry.encode(entry, key, "k")
    expect(sealed).not.toContain("abc.DEF")
    expect(StoredEntry.decode(sealed, key, "k")).toEqual(Either.right(entry))
    // The same sealed value copied under another name does not open.
    expect(StoredEntry.decode(sealed, key, "other")._tag).toBe("Left")
    // Two seals of one entry differ (a fresh IV each time).
    expect(StoredEntry.encode(entry, key, "k")).not.toBe(sealed)
  })
})
