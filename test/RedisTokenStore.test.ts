/**
 * TokenStore.layerRedis on a real redis-server, through both clients the library adapts (ioredis
 * and node-redis): the store's atomic steps, what lands in Redis (key names, the sealed value, the
 * TTL), a hostile or misconfigured Redis, Redis frozen, and a paused leaseholder. The fleet of
 * processes is in test/Fleet.test.ts.
 */
import { Deferred, Effect, Either, Exit, Fiber, Layer, Metric, Redacted, Scope } from "effect"
import { ClinicalClient, HttpTransport, MedicationService, TokenService, TokenStore } from "effect-clinical"
import { createClinicalClient, PersonData } from "effect-clinical/promise"
import { MockClinicalServer } from "effect-clinical/testing"
import { Redis } from "ioredis"
import { createClient } from "redis"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import * as Telemetry from "../src/internal/observability/telemetry.js"
import * as Keys from "./support/Keys.js"
import * as Leaks from "./support/Leaks.js"
import * as RedisServer from "./support/RedisServer.js"

let server: RedisServer.RedisServer
beforeAll(async () => {
  server = await RedisServer.start()
})
afterAll(async () => {
  await server?.stop()
})

/** A Redis connection of each kind, as the docs recommend configuring it: no queue while disconnected. */
const connect = {
  ioredis: async () => {
    const client = new Redis(server.port, "127.0.0.1", {
      lazyConnect: true,
      enableOfflineQueue: false,
      autoResendUnfulfilledCommands: false
    })
    await client.connect()
    return { redis: TokenStore.ioredis(client), close: () => client.disconnect() }
  },
  "node-redis": async () => {
    const client = createClient({ url: server.url, disableOfflineQueue: true })
    client.on("error", () => {})
    await client.connect()
    return { redis: TokenStore.nodeRedis(client), close: () => client.destroy() }
  }
} as const

const opened: Array<{ close: () => unknown }> = []
afterEach(async () => {
  for (const connection of opened.splice(0)) await connection.close()
  const admin = await connect.ioredis()
  await admin.redis.send(["FLUSHALL"])
  admin.close()
})

const open = async (kind: keyof typeof connect) => {
  const connection = await connect[kind]()
  opened.push(connection)
  return connection
}

const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect)

const storeOf = (redis: TokenStore.RedisCommands, options: Partial<TokenStore.RedisOptions> = {}) =>
  Either.getOrThrow(TokenStore.redis({ redis, ...options }))

const APPLICATION_ID = "5e0c2b8a-9d7f-4c1e-a3b6-0f2d4e6a8c10"
const TOKEN = "RXhhbXBsZVRva2VuLU9uZS1Ud28tVGhyZWU=.QS1CK0MvRA==/+="
const KEY = "0123456789abcdef0123456789abcdef"

const entry: TokenStore.Entry = {
  token: Redacted.make(TOKEN),
  lifetimeMillis: 3_600_000,
  serverLifetimeMillis: 3_600_000,
  serverClockSkewMillis: -250
}

for (const kind of ["ioredis", "node-redis"] as const) {
  describe(`TokenStore over ${kind}`, () => {
    it("each step is atomic and fenced: the lease, the compare-and-set, the compare-and-invalidate", async () => {
      const { redis } = await open(kind)
      const store = storeOf(redis)
      expect(await run(store.read(KEY))).toEqual({ stored: undefined, generation: 0, lease: undefined })
      expect(await run(store.acquireLease(KEY, "a", 5000))).toBe(true)
      expect(await run(store.acquireLease(KEY, "b", 5000))).toBe(false)
      await run(store.releaseLease(KEY, "b")) // not b's to give back
      expect((await run(store.read(KEY))).lease).toBe("a")
      expect(await run(store.publish(KEY, 0, entry, 60_000, "a"))).toBe(1)
      const read = await run(store.read(KEY))
      expect(read).toMatchObject({
        generation: 1,
        lease: undefined,
        stored: { generation: 1, fingerprint: TokenStore.fingerprint(entry.token) }
      })
      expect(read.stored!.entry).toEqual(entry)
      expect(Redacted.value(read.stored!.entry.token)).toBe(TOKEN)
      expect(read.stored!.remainingMillis).toBeGreaterThan(59_000)
      expect(read.stored!.remainingMillis).toBeLessThanOrEqual(60_000)
      // A publisher who read generation 0 before this publication loses, and changes nothing.
      expect(await run(store.publish(KEY, 0, { ...entry, token: Redacted.make("late") }, 60_000, "c"))).toBe(undefined)
      expect((await run(store.read(KEY))).stored?.generation).toBe(1)
      // Refusals of another token change nothing; of this one, drop it and keep the count.
      await run(store.invalidate(KEY, TokenStore.fingerprint(Redacted.make("late"))))
      await run(store.invalidate(KEY, "0".repeat(32)))
      expect((await run(store.read(KEY))).stored?.generation).toBe(1)
      await run(store.invalidate(KEY, TokenStore.fingerprint(entry.token)))
      expect(await run(store.read(KEY))).toEqual({ stored: undefined, generation: 1, lease: undefined })
      expect(await run(store.publish(KEY, 1, entry, 60_000, "a"))).toBe(2)
    })

    it("the lease and the token expire by Redis's clock (PX), not by any instance's", async () => {
      const { redis } = await open(kind)
      const store = storeOf(redis)
      // Long enough that a loaded machine reads the lease before it expires (100 ms was not).
      expect(await run(store.acquireLease(KEY, "a", 1000))).toBe(true)
      await run(store.publish(KEY, 0, entry, 1500, "someone else"))
      expect((await run(store.read(KEY))).lease).toBe("a")
      await new Promise((resolve) => setTimeout(resolve, 1700))
      expect(await run(store.read(KEY))).toEqual({ stored: undefined, generation: 1, lease: undefined })
      expect(await run(store.acquireLease(KEY, "b", 100))).toBe(true)
    })

    it("the token endpoint's pause: a status and Redis's TTL, never shortened, read in the same step; planted ones count as none", async () => {
      const { redis } = await open(kind)
      const store = storeOf(redis)
      const pauseKey = `effect-clinical:{${KEY}}:pause`
      await run(store.pause!(KEY, 429, 5000))
      await run(store.pause!(KEY, 503, 1000)) // shorter: the longer one stays
      expect(await redis.send(["GET", pauseKey])).toBe("429")
      const { paused } = await run(store.read(KEY))
      expect(paused?.status).toBe(429)
      expect(paused!.remainingMillis).toBeGreaterThan(4000)
      expect(paused!.remainingMillis).toBeLessThanOrEqual(5000)
      await run(store.pause!(KEY, 503, 8000.4)) // longer: it replaces it, the TTL rounded up
      expect(await redis.send(["GET", pauseKey])).toBe("503")
      expect(Number(await redis.send(["PTTL", pauseKey]))).toBeGreaterThan(7000)
      // What someone else wrote there: no TTL, another value, another type, or a long text.
      const planted: ReadonlyArray<ReadonlyArray<string>> = [
        ["SET", pauseKey, "429"],
        ["SET", pauseKey, "418", "PX", "60000"],
        ["SET", pauseKey, "429".repeat(1000), "PX", "60000"]
      ]
      for (const command of planted) {
        await redis.send(command)
        expect((await run(store.read(KEY))).paused).toBeUndefined()
      }
      await redis.send(["DEL", pauseKey])
      await redis.send(["HSET", pauseKey, "a", "b"])
      await redis.send(["PEXPIRE", pauseKey, "60000"])
      expect(await run(store.read(KEY))).toEqual({ stored: undefined, generation: 0, lease: undefined })
      // A pause replaces what no instance honours, however long its TTL: a key of another type, a
      // value of another status, a pause longer than any instance records.
      for (const plant of [[], ["SET", pauseKey, "418", "PX", "60000"], ["SET", pauseKey, "503", "PX", "7200000"]]) {
        if (plant.length > 0) await redis.send(plant)
        await run(store.pause!(KEY, 429, 2000))
        expect((await run(store.read(KEY))).paused?.status).toBe(429)
        expect(Number(await redis.send(["PTTL", pauseKey]))).toBeLessThanOrEqual(2000)
      }
    })

    it("a pause, a lease or a token of less than a millisecond is still recorded: TTLs are rounded up (Redis refuses PX 0)", async () => {
      const { redis } = await open(kind)
      const store = storeOf(redis)
      // A pause the endpoint asked for must last at least that long: recorded, not refused as PX 0
      // (a pause is capped at maxRetryAfter, which may be "500 micros").
      await run(store.pause!(KEY, 429, 0.4))
      expect(await run(store.acquireLease(KEY, "a", 0.4))).toBe(true)
      expect(await run(store.publish(KEY, 0, entry, 0.4, "a"))).toBe(1)
      // Redis's expiry is in whole milliseconds: a pause of 8000.4 ms ends 8001 ms or more after the
      // call began, by Redis's clock.
      const [seconds, micros] = (await redis.send(["TIME"])) as [string, string]
      const before = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000)
      await run(store.pause!(KEY, 503, 8000.4))
      const expiresAt = Number(await redis.send(["PEXPIRETIME", `effect-clinical:{${KEY}}:pause`]))
      expect(expiresAt - before).toBeGreaterThanOrEqual(8001)
    })

    it("sealed, the token is not in Redis in any form, and the key names hold a hash, never the ApplicationId", async () => {
      const { redis } = await open(kind)
      const sealingKey = Redacted.make(Keys.sealingKey(7).toString("base64"))
      const store = storeOf(redis, { sealingKey, keyPrefix: "clinical-test" })
      const key = TokenService.storeKey(
        {
          authUrl: "https://openapiauthtest.intelichart.com",
          tokenPath: "/api/Server/Token",
          applicationId: Redacted.make(APPLICATION_ID)
        } as Parameters<typeof TokenService.storeKey>[0]
      )
      await run(store.acquireLease(key, "a", 5000))
      await run(store.publish(key, 0, entry, 60_000, "a"))
      const names = (await redis.send(["KEYS", "*"])) as Array<string>
      expect(names.sort()).toEqual([`clinical-test:{${key}}:generation`, `clinical-test:{${key}}:token`])
      const raw = (await redis.send(["GET", `clinical-test:{${key}}:token`])) as string
      expect(raw.slice(0, 33)).toBe(`${TokenStore.fingerprint(entry.token)}|`)
      expect(raw.slice(33).startsWith("sealed:v1:")).toBe(true)
      Leaks.expectNone("stored value", raw, [TOKEN])
      Leaks.expectNone("key names", names.join(" "), [APPLICATION_ID])
      expect((await run(store.read(key))).stored?.entry).toEqual(entry)
      // Another key cannot open it, an unsealing instance cannot read it, and neither says what it holds.
      const others = [
        storeOf(redis, { keyPrefix: "clinical-test", sealingKey: Redacted.make(Keys.sealingKey(8).toString("hex")) }),
        storeOf(redis, { keyPrefix: "clinical-test" })
      ]
      for (const other of others) {
        const snapshot = await run(other.read(key))
        expect(snapshot).toMatchObject({ stored: undefined, generation: 1, unreadable: { sealedOtherwise: true } })
        Leaks.expectNone("snapshot", JSON.stringify(snapshot), [TOKEN, APPLICATION_ID])
      }
    })

    it("a hostile or broken value in Redis is never a token in a header: it is unreadable, and says why", async () => {
      const { redis } = await open(kind)
      const store = storeOf(redis)
      const base = `effect-clinical:{${KEY}}`
      const print = (token: string) => TokenStore.fingerprint(Redacted.make(token))
      const injected = `${TOKEN}\r\nX-Injected: 1`
      const planted: ReadonlyArray<readonly [string, boolean]> = [
        [`${print(injected)}|${JSON.stringify({ ...entry, token: injected })}`, false],
        [`${print(TOKEN)}|${JSON.stringify({ ...entry, token: TOKEN, lifetimeMillis: -5 })}`, false],
        // Another token's fingerprint in front of this one: it would drop the wrong token when refused.
        [`${print("another")}|${JSON.stringify({ ...entry, token: TOKEN })}`, false],
        [`${print(TOKEN)}|not json`, false],
        // Sealed, for an instance without a key: it may be another key's.
        [`${print(TOKEN)}|sealed:v1:AAAA`, true],
        [JSON.stringify({ ...entry, token: TOKEN }), false],
        // Longer than any token: not even read whole.
        [`${print(TOKEN)}|${"x".repeat(1024 * 1024)}`, false]
      ]
      for (const [value, sealedOtherwise] of planted) {
        await redis.send(["SET", `${base}:token`, value, "PX", "60000"])
        const snapshot = await run(store.read(KEY))
        expect(snapshot).toMatchObject({ stored: undefined, generation: 0, unreadable: { sealedOtherwise } })
        expect(snapshot.unreadable!.remainingMillis).toBeGreaterThan(59_000)
        Leaks.expectNone("snapshot", JSON.stringify(snapshot), [TOKEN])
      }
      await redis.send(["SET", `${base}:generation`, "seven"])
      expect(await run(store.read(KEY))).toMatchObject({
        stored: undefined,
        generation: -1,
        unreadable: { reason: "the stored generation is not a number", sealedOtherwise: false }
      })
      // A key of another type is read around (GET on it would fail with WRONGTYPE), as unreadable.
      await redis.send(["DEL", `${base}:generation`, `${base}:token`])
      await redis.send(["HSET", `${base}:token`, "a", "b"])
      await redis.send(["PEXPIRE", `${base}:token`, "60000"])
      expect(await run(store.read(KEY))).toMatchObject({
        stored: undefined,
        generation: 0,
        unreadable: { sealedOtherwise: false }
      })
      // A reply the store cannot read at all is still a typed failure.
      const broken = storeOf(TokenStore.fromSend(() => Promise.resolve("not a list")))
      expect(await Effect.runPromiseExit(broken.read(KEY))).toMatchObject({
        _tag: "Failure",
        cause: { error: { _tag: "TokenStoreError", reason: "Unreadable" } }
      })
    })
  })
}

/** A client of `mock` with its own Redis connection, built once; `overrides` on the client's settings. */
const clientOf = async (
  mock: MockClinicalServer.Started,
  kind: keyof typeof connect,
  store: Partial<TokenStore.RedisOptions> = {},
  overrides: object = {}
) => {
  const { redis } = await open(kind)
  const layer = ClinicalClient.layerUndici({ baseUrl: mock.url, applicationId: mock.applicationId, ...overrides })
    .pipe(Layer.provide(TokenStore.layerRedis({ redis, ...store })))
  const scope = await run(Scope.make())
  opened.push({ close: () => run(Scope.close(scope, Exit.void)) })
  const context = await run(Layer.buildWithScope(layer, scope))
  return <A, E>(effect: Effect.Effect<A, E, ClinicalClient.Services>) => run(Effect.provide(effect, context))
}

describe("clients over one Redis and the mock on loopback", () => {
  let mock: MockClinicalServer.Started
  beforeAll(async () => {
    mock = await MockClinicalServer.start()
  })
  afterAll(async () => {
    await mock?.close()
  })
  afterEach(async () => {
    await mock.resetCounters()
  })

  const client = (kind: keyof typeof connect, store: Partial<TokenStore.RedisOptions> = {}, overrides: object = {}) =>
    clientOf(mock, kind, store, overrides)

  it("two instances, one over each client, many concurrent callers: one token request, one token", async () => {
    const a = await client("ioredis")
    const b = await client("node-redis")
    const tokens = await Promise.all(Array.from({ length: 100 }, (_, i) => (i % 2 === 0 ? a : b)(TokenService.get)))
    expect((await mock.counters()).tokenRequests).toBe(1)
    expect(new Set(tokens.map((token) => Redacted.value(token.token))).size).toBe(1)
    expect(new Set(tokens.map((token) => token.storeGeneration))).toEqual(new Set([1]))
  })

  it("Promise clients take the same store: createClinicalClient({ ..., tokenStore })", async () => {
    const clients = [await open("ioredis"), await open("node-redis")].map(({ redis }) => {
      const clinical = createClinicalClient({
        baseUrl: mock.url,
        applicationId: mock.applicationId,
        tokenStore: { redis }
      })
      opened.push(clinical)
      return clinical
    })
    const personUid = mock.persons[0]!.personUid
    const answers = await Promise.all(
      clients.flatMap((clinical) => [clinical.medications(personUid), clinical.token()])
    )
    expect(answers).toHaveLength(4)
    expect((await mock.counters()).tokenRequests).toBe(1)
  })

  it("a lease with no expiry (planted, or left by PERSIST) does not hold anyone up: it is replaced", async () => {
    const { redis } = await open("ioredis")
    const key = TokenService.storeKey(
      {
        authUrl: mock.url,
        tokenPath: "/api/Server/Token",
        applicationId: Redacted.make(mock.applicationId)
      } as Parameters<typeof TokenService.storeKey>[0]
    )
    await redis.send(["SET", `effect-clinical:{${key}}:lease`, "somebody"])
    const a = await client("ioredis", { onUnavailable: "fail" })
    const started = Date.now()
    expect(await a(TokenService.get)).toMatchObject({ source: "server", storeGeneration: 1 })
    // A lease lasts 12.5 s here: nobody waited for one.
    expect(Date.now() - started).toBeLessThan(5000)
    expect(await redis.send(["EXISTS", `effect-clinical:{${key}}:lease`])).toBe(0)
  })

  it("a client whose errors repeat the command never puts the token into an error or a log line", async () => {
    const { redis } = await open("ioredis")
    // Reads and leases go to Redis; a publication fails with the whole command in its message.
    const echoing = TokenStore.fromSend(async (command) => {
      if (command.some((word) => /^[0-9a-f]{32}\|/.test(word))) throw new Error(`ERR failed: ${command.join(" ")}`)
      return redis.send(command)
    })
    const entries: Array<string> = []
    const clinical = createClinicalClient({
      baseUrl: mock.url,
      applicationId: mock.applicationId,
      tokenStore: { redis: echoing },
      logLevel: "debug",
      logger: (entry) => entries.push(JSON.stringify(entry))
    })
    opened.push(clinical)
    const { items } = await clinical.get(PersonData.medications, mock.persons[0]!.personUid)
    expect(items.length).toBeGreaterThan(0)
    expect(entries.some((line) => line.includes("token store unavailable"))).toBe(true)
    // The token as it went on the wire, from the mock's own log.
    const sent = (await mock.requestLog()).find((entry) => entry.operation === "medications")
    const token = Object.entries(sent!.headers).find(([name]) => name.toLowerCase() === "authorization")![1]
      .replace(/^Bearer /, "")
    for (const line of entries) Leaks.expectNone("log line", line, [token, mock.applicationId])
  })

  it("Redis frozen: a refresh waits no longer than the store's timeout, then goes on alone", async () => {
    const a = await client("ioredis", { timeout: "200 millis", retryAfter: "10 seconds" })
    server.pause()
    try {
      const started = Date.now()
      const token = await a(TokenService.get)
      // Without the timeout this would hang until Redis thaws.
      expect(Date.now() - started).toBeLessThan(3000)
      expect(token).toMatchObject({ source: "server", storeGeneration: undefined })
    } finally {
      server.resume()
    }
    expect((await mock.counters()).tokenRequests).toBe(1)
  })

  it("a leaseholder paused past its lease publishes late, loses to the newer token, and adopts it", async () => {
    const resume = await run(Deferred.make<void>())
    const connectionA = await open("ioredis")
    // a pauses between receiving its token and publishing it (as a stopped process would).
    const pausedTransport = Layer.effect(
      HttpTransport.HttpTransport,
      Effect.map(HttpTransport.HttpTransport, (inner): HttpTransport.Service => ({
        send: (request) =>
          request.url.endsWith("/api/Server/Token")
            ? Effect.zipLeft(inner.send(request), Deferred.await(resume))
            : inner.send(request)
      }))
    ).pipe(Layer.provide(HttpTransport.layerUndici()))
    const settings = { baseUrl: mock.url, applicationId: mock.applicationId, tokenTimeout: "300 millis" } as const
    const a = ClinicalClient.layer(settings).pipe(
      Layer.provide(pausedTransport),
      Layer.provide(TokenStore.layerRedis({ redis: connectionA.redis }))
    )
    const b = await client("node-redis", {}, { tokenTimeout: "300 millis" })
    const late = Effect.runFork(Effect.provide(TokenService.get, a))
    while ((await mock.counters()).tokenRequests < 1) await new Promise((resolve) => setTimeout(resolve, 10))
    // a's lease: 300 ms + 2 x 250 ms + 1 s. Then b takes it and publishes generation 1.
    await new Promise((resolve) => setTimeout(resolve, 2000))
    const newer = await b(TokenService.get)
    expect(newer).toMatchObject({ source: "server", storeGeneration: 1 })
    await run(Deferred.succeed(resume, undefined))
    const adopted = await run(Fiber.join(late))
    expect(Redacted.value(adopted.token)).toBe(Redacted.value(newer.token))
    expect(adopted).toMatchObject({ source: "store", storeGeneration: 1 })
    expect((await mock.counters()).tokenRequests).toBe(2)
  }, 15_000)

  it(
    "the token endpoint's 429 with Retry-After to one instance pauses the other: it asks nothing, then succeeds",
    async () => {
      const a = await client("ioredis")
      const b = await client("node-redis")
      await mock.injectFaults("token", [MockClinicalServer.Fault.status(429, { retryAfter: 2 })])
      expect(await a(Effect.flip(TokenService.get))).toMatchObject({ _tag: "RateLimited", retryAfterMillis: 2000 })
      const refused = await b(Effect.flip(TokenService.get))
      expect(refused).toMatchObject({ _tag: "RateLimited", operation: "token", status: 429 })
      expect((refused as { retryAfterMillis: number }).retryAfterMillis).toBeGreaterThan(1000)
      expect((await mock.counters()).tokenRequests).toBe(1)
      // The call waits the pause out (its deadline allows) and succeeds with one more token request.
      const started = Date.now()
      const { medications } = await b(MedicationService.get(mock.persons[0]!.personUid))
      expect(medications.length).toBeGreaterThan(0)
      expect(Date.now() - started).toBeGreaterThan(500)
      expect((await mock.counters()).tokenRequests).toBe(2)
    },
    15_000
  )

  it("a seal another instance cannot open: it fails (fail) or goes on alone (local), and its error holds no secret", async () => {
    const a = await client("ioredis", { sealingKey: Keys.sealingKey(1) })
    const b = await client("ioredis", { sealingKey: Keys.sealingKey(2), onUnavailable: "fail" })
    const c = await client("node-redis", { sealingKey: Keys.sealingKey(3) })
    const first = await a(TokenService.get)
    const failed = await b(Effect.exit(TokenService.get))
    expect(failed).toMatchObject({
      _tag: "Failure",
      cause: { error: { _tag: "TokenStoreError", reason: "Unreadable" } }
    })
    Leaks.expectNoneInExit(failed, [Redacted.value(first.token), mock.applicationId])
    const own = await c(TokenService.get)
    expect(own).toMatchObject({ source: "server", storeGeneration: undefined })
    expect((await mock.counters()).tokenRequests).toBe(2)
  })

  describe("what no instance can read is repaired, not lived with (issue 22)", () => {
    const client = (store: Partial<TokenStore.RedisOptions> = {}) => clientOf(mock, "ioredis", store)

    const names = () => {
      const key = TokenService.storeKey(
        {
          authUrl: mock.url,
          tokenPath: "/api/Server/Token",
          applicationId: Redacted.make(mock.applicationId)
        } as Parameters<typeof TokenService.storeKey>[0]
      )
      return { token: `effect-clinical:{${key}}:token`, generation: `effect-clinical:{${key}}:generation`, key }
    }

    const repairs = () => run(Metric.value(Telemetry.tokenStoreRepairs)).then((state) => state.count)

    for (const onUnavailable of ["local", "fail"] as const) {
      it(`a generation that is not a number (it has no TTL) is replaced by the first refresh (${onUnavailable})`, async () => {
        const { redis } = await open("ioredis")
        await redis.send(["SET", names().generation, "seven"])
        const before = await repairs()
        const a = await client({ onUnavailable })
        const b = await client({ onUnavailable })
        expect(await a(TokenService.get)).toMatchObject({ source: "server", storeGeneration: 1 })
        expect(await redis.send(["GET", names().generation])).toBe("1")
        expect(await b(TokenService.get)).toMatchObject({ source: "store", storeGeneration: 1 })
        expect((await mock.counters()).tokenRequests).toBe(1)
        expect(await repairs()).toBe(before + 1)
      })
    }

    it("keys of another type (a hash planted with HSET) are read as unreadable and replaced (from review)", async () => {
      const { redis } = await open("ioredis")
      const a = await client({ onUnavailable: "fail" })
      await a(TokenService.get)
      // Every key of the token a hash: GET on any of them failed with WRONGTYPE, every refresh after.
      for (const key of [names().token, names().generation, names().token.replace(/:token$/, ":lease")]) {
        await redis.send(["DEL", key])
        await redis.send(["HSET", key, "planted", "1"])
      }
      await mock.resetCounters()
      const b = await client({ onUnavailable: "fail" })
      const c = await client({ onUnavailable: "fail" })
      expect(await b(TokenService.get)).toMatchObject({ source: "server", storeGeneration: 1 })
      expect(await c(TokenService.get)).toMatchObject({ source: "store", storeGeneration: 1 })
      expect(await redis.send(["TYPE", names().generation])).toBe("string")
      expect(await redis.send(["TYPE", names().token])).toBe("string")
      expect((await mock.counters()).tokenRequests).toBe(1)
    })

    it("a token value no instance wrote, set to last ten years, is replaced: the fleet shares one token again", async () => {
      const { redis } = await open("ioredis")
      await redis.send(["SET", names().token, "garbage|{}", "PX", String(10 * 365 * 24 * 3_600_000)])
      const a = await client()
      const b = await client()
      expect(await a(TokenService.get)).toMatchObject({ source: "server", storeGeneration: 1 })
      expect(await b(TokenService.get)).toMatchObject({ source: "store", storeGeneration: 1 })
      expect(Number(await redis.send(["PTTL", names().token]))).toBeLessThanOrEqual(3_600_000)
      expect((await mock.counters()).tokenRequests).toBe(1)
    })

    it("a seal of another key that would outlive any token is replaced; one within a token's lifetime is left alone", async () => {
      const { redis } = await open("ioredis")
      const other = storeOf(redis, { sealingKey: Keys.sealingKey(21) })
      const own = { sealingKey: Keys.sealingKey(22) }
      // Published by an instance with another key, for two days: longer than the 24 h cap on any token.
      await run(other.publish(names().key, 0, entry, 2 * 24 * 3_600_000, "other"))
      const a = await client(own)
      const b = await client(own)
      expect(await a(TokenService.get)).toMatchObject({ source: "server", storeGeneration: 2 })
      expect(await b(TokenService.get)).toMatchObject({ source: "store", storeGeneration: 2 })
      expect((await mock.counters()).tokenRequests).toBe(1)
      // Within a token's lifetime, another key's token is other instances' at work: left to them.
      await run(other.publish(names().key, 2, entry, 3_600_000, "other"))
      const c = await client({ ...own, onUnavailable: "fail" })
      expect(await c(Effect.exit(TokenService.get))).toMatchObject({
        _tag: "Failure",
        cause: { error: { _tag: "TokenStoreError", reason: "Unreadable" } }
      })
    })
  })
})
