/**
 * The Effect 4 line's shared token store: two `TokenService` instances over one store make one
 * token request between them (in memory, and through a real redis-server with an ioredis client
 * each), a token sealed in Redis holds nothing secret in the clear, a refused token is dropped
 * from the store, and a store that fails goes on alone (`local`) or fails typed (`fail`) without
 * its error carrying the ApplicationId. The redis-server is the root tests' own starter
 * (test/support/RedisServer.ts: Effect-free, on a free loopback port).
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Context, Effect, Layer, Redacted, Result } from "effect"
import { Redis } from "ioredis"
import * as HttpDate from "../../core/httpDate.js"
import { decode, Unreadable } from "../../core/token/storedEntry.js"
import * as RedisServer from "../../test/support/RedisServer.js"
import * as ClinicalConfig from "../src/ClinicalConfig.js"
import { TokenStoreError } from "../src/ClinicalError.js"
import * as HttpTransport from "../src/HttpTransport.js"
import * as TokenService from "../src/TokenService.js"
import * as TokenStore from "../src/TokenStore.js"

const APPLICATION_ID = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"
const HOUR = 3_600_000
const SEALING_KEY = Redacted.make("k7Pq2mXv9RtL4wZs8BnC1dFgH5jK3yUe6oIa0pQrStE=")

/** A token endpoint in memory: an hour's tokens (`tok-1`, `tok-2`, ...), each answered after `delayMillis`; its requests counted. */
const endpoint = (delayMillis = 0) => {
  let requests = 0
  const layer = HttpTransport.layerMemory(() =>
    Effect.gen(function*() {
      const n = ++requests
      yield* Effect.sleep(delayMillis)
      const now = yield* Clock.currentTimeMillis
      return HttpTransport.jsonResponse(200, { Token: `tok-${n}`, TokenType: "Bearer" }, {
        Date: HttpDate.format(now),
        TOKEN_EXPIRES: HttpDate.format(now + HOUR)
      })
    })
  )
  return { requests: () => requests, layer }
}

const config = ClinicalConfig.layer({ baseUrl: "https://api.example", applicationId: APPLICATION_ID })

/** One `TokenService` instance over `transport`, with `store` (a layer) if given. */
const instance = (
  transport: Layer.Layer<HttpTransport.HttpTransport, unknown>,
  store?: Layer.Layer<TokenStore.TokenStore, unknown>
) => {
  const service = TokenService.layer.pipe(Layer.provide(transport), Layer.provide(config))
  return Layer.build(store === undefined ? service : service.pipe(Layer.provide(store)))
}

const get = (context: Context.Context<TokenService.TokenService>) =>
  TokenService.TokenService.use((tokens) => tokens.get).pipe(Effect.provide(context))

/** The same store for every instance it is given to (one process's clients). */
const shared = (store: TokenStore.Service) => Layer.succeed(TokenStore.TokenStore, store)

describe("TokenStore (Effect 4): in memory", () => {
  it.live("two instances over one store, asking at once: one token request, the same token for both", () =>
    Effect.gen(function*() {
      const { layer, requests } = endpoint(30)
      const store = TokenStore.memory()
      const a = yield* instance(layer, shared(store))
      const b = yield* instance(layer, shared(store))
      const [first, second] = yield* Effect.all([get(a), get(b)], { concurrency: "unbounded" })
      assert.strictEqual(requests(), 1)
      assert.strictEqual(Redacted.value(first.token), "tok-1")
      assert.strictEqual(Redacted.value(second.token), "tok-1")
      assert.deepStrictEqual([first.source, second.source].sort(), ["server", "store"])
      assert.strictEqual(first.storeGeneration, 1)
      assert.strictEqual(second.storeGeneration, 1)
    }))

  it.effect("without a store provided, each instance has its own: two requests", () =>
    Effect.gen(function*() {
      const { layer, requests } = endpoint()
      const a = yield* instance(layer)
      const b = yield* instance(layer)
      yield* get(a)
      yield* get(b)
      assert.strictEqual(requests(), 2)
    }))

  it.effect("a token refused (401) is dropped from the store: the other instance does not take it, and asks anew", () =>
    Effect.gen(function*() {
      const { layer, requests } = endpoint()
      const store = TokenStore.memory()
      const a = yield* instance(layer, shared(store))
      const refused = yield* get(a)
      yield* TokenService.TokenService.use((tokens) => tokens.invalidate(refused)).pipe(Effect.provide(a))
      const b = yield* instance(layer, shared(store))
      const fresh = yield* get(b)
      assert.strictEqual(requests(), 2)
      assert.strictEqual(Redacted.value(fresh.token), "tok-2")
      assert.strictEqual(fresh.source, "server")
      assert.strictEqual(fresh.storeGeneration, 2)
    }))
})

/** A Redis port whose every command fails as a client does when the server is gone, echoing what it was sent. */
const unreachable = TokenStore.fromSend((command) =>
  Promise.reject(new Error(`connect ECONNREFUSED 127.0.0.1:6379 while sending ${command.join(" ")} ${APPLICATION_ID}`))
)

describe("TokenStore (Effect 4): a store that fails", () => {
  it.effect("local (the default): the instance gets a token of its own, not in the store", () =>
    Effect.gen(function*() {
      const { layer, requests } = endpoint()
      const a = yield* instance(layer, TokenStore.layerRedis({ redis: unreachable }))
      const token = yield* get(a)
      assert.strictEqual(requests(), 1)
      assert.strictEqual(token.source, "server")
      assert.strictEqual(token.storeGeneration, undefined)
    }))

  it.effect("fail: the refresh fails with TokenStoreError (Unavailable), no token requested, no ApplicationId in it", () =>
    Effect.gen(function*() {
      const { layer, requests } = endpoint()
      const a = yield* instance(layer, TokenStore.layerRedis({ redis: unreachable, onUnavailable: "fail" }))
      const error = yield* Effect.flip(get(a))
      assert.instanceOf(error, TokenStoreError)
      assert.strictEqual((error as TokenStoreError).reason, "Unavailable")
      assert.include(error.message, "ECONNREFUSED")
      assert.notInclude(JSON.stringify(error) + error.message, APPLICATION_ID)
      // Then the store is left alone for its retryAfter: the next refresh fails at once, still asking nothing.
      const again = yield* Effect.flip(get(a))
      assert.include(again.message, "left alone")
      assert.strictEqual(requests(), 0)
    }))

  it.effect("a refused option fails the layer with InvalidConfig naming it", () =>
    Effect.gen(function*() {
      const refused = TokenStore.redis({ redis: unreachable, keyPrefix: "no spaces" })
      assert.isTrue(Result.isFailure(refused))
      if (Result.isFailure(refused)) {
        assert.strictEqual(refused.failure.setting, "tokenStore.keyPrefix")
      }
      const weak = yield* Effect.flip(
        Layer.build(TokenStore.layerRedis({ redis: unreachable, sealingKey: "a".repeat(64) }))
      )
      assert.strictEqual(weak.setting, "tokenStore.sealingKey")
      assert.notInclude(weak.message, "a".repeat(64))
    }))
})

describe("TokenStore (Effect 4): a real redis-server", () => {
  /** A server for the test, and an ioredis client per instance; all ended with the test's scope. */
  const redisServer = Effect.acquireRelease(
    Effect.promise(() => RedisServer.start()),
    (server) => Effect.promise(() => server.stop())
  )
  const client = (port: number) =>
    Effect.acquireRelease(
      Effect.sync(() => new Redis(port, "127.0.0.1")),
      (redis) => Effect.sync(() => redis.disconnect())
    )

  it.live("two clients over one Redis, asking at once: one token request; sealed, nothing secret in Redis", () =>
    Effect.gen(function*() {
      const server = yield* redisServer
      const { layer, requests } = endpoint(50)
      const over = (redis: Redis) =>
        instance(layer, TokenStore.layerRedis({ redis: TokenStore.ioredis(redis), sealingKey: SEALING_KEY }))
      const a = yield* over(yield* client(server.port))
      const b = yield* over(yield* client(server.port))
      const [first, second] = yield* Effect.all([get(a), get(b)], { concurrency: "unbounded" })
      assert.strictEqual(requests(), 1)
      assert.strictEqual(Redacted.value(first.token), "tok-1")
      assert.strictEqual(Redacted.value(second.token), "tok-1")
      assert.strictEqual(first.storeGeneration, 1)

      const contents = yield* Effect.promise(() => RedisServer.contents(server.port))
      assert.notInclude(contents, "tok-1")
      assert.notInclude(contents.toLowerCase(), APPLICATION_ID)
      // The stored entry is the core's: it opens with the same key, under its key name, into the token served.
      const admin = yield* client(server.port)
      const [name] = yield* Effect.promise(() => admin.keys("effect-clinical:*:token"))
      const stored = yield* Effect.promise(() => admin.get(name!))
      assert.match(stored!, /^[0-9a-f]{32}\|sealed:v1:/)
      const opened = decode(stored!, (token) => token, Buffer.from(Redacted.value(SEALING_KEY), "base64"), name!)
      assert.isFalse(opened instanceof Unreadable)
      if (!(opened instanceof Unreadable)) assert.strictEqual(opened.entry.token, "tok-1")
    }))

  it.live("a client with another sealing key cannot open the token: fail-closed fails typed, no token requested", () =>
    Effect.gen(function*() {
      const server = yield* redisServer
      const { layer, requests } = endpoint()
      const a = yield* instance(
        layer,
        TokenStore.layerRedis({ redis: TokenStore.ioredis(yield* client(server.port)), sealingKey: SEALING_KEY })
      )
      yield* get(a)
      const other = Redacted.make(Buffer.from(Array.from({ length: 32 }, (_, i) => i * 7 + 1)).toString("hex"))
      const b = yield* instance(
        layer,
        TokenStore.layerRedis({
          redis: TokenStore.ioredis(yield* client(server.port)),
          sealingKey: other,
          onUnavailable: "fail"
        })
      )
      const error = yield* Effect.flip(get(b))
      assert.strictEqual(error._tag, "TokenStoreError")
      assert.strictEqual((error as TokenStoreError).reason, "Unreadable")
      assert.strictEqual(requests(), 1)
    }))
})
