/**
 * The Effect 4 line's token cache, on Effect 4's TestClock over the in-memory transport: one
 * request for many waiters, the soft window's background refresh, a throttled endpoint failing
 * fast without a request, invalidation by generation, and a bounded wait.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Exit, Fiber, Layer, Redacted } from "effect"
import { TestClock } from "effect/testing"
import * as HttpDate from "../../core/httpDate.js"
import * as ClinicalConfig from "../src/ClinicalConfig.js"
import * as HttpTransport from "../src/HttpTransport.js"
import * as TokenService from "../src/TokenService.js"

const APPLICATION_ID = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"
const HOUR = 3_600_000

/** A token endpoint in memory: an hour's tokens (`tok-1`, `tok-2`, ...), or what `answer` says; its requests counted. */
const endpoint = (answer?: (n: number) => HttpTransport.TransportResponse | undefined) => {
  const seen: Array<{ readonly url: string; readonly body: string | undefined }> = []
  const layer = HttpTransport.layerMemory((request) =>
    Effect.map(Clock.currentTimeMillis, (now) => {
      seen.push({ url: request.url, body: HttpTransport.wireBody(request) })
      return answer?.(seen.length) ??
        HttpTransport.jsonResponse(200, { Token: `tok-${seen.length}`, TokenType: "Bearer" }, {
          Date: HttpDate.format(now),
          TOKEN_EXPIRES: HttpDate.format(now + HOUR)
        })
    })
  )
  return { seen, layer }
}

const service = (transport: Layer.Layer<HttpTransport.HttpTransport, unknown>) =>
  TokenService.layer.pipe(
    Layer.provide(transport),
    Layer.provide(ClinicalConfig.layer({ baseUrl: "https://api.example", applicationId: APPLICATION_ID }))
  )

const get = TokenService.TokenService.use((tokens) => tokens.get)

describe("TokenService (Effect 4)", () => {
  it.effect("a cold cache: fifty waiters, one token request with the ApplicationId; the token kept Redacted", () =>
    Effect.gen(function*() {
      const { layer, seen } = endpoint()
      const tokens = yield* Effect.all(Array.from({ length: 50 }, () => get), { concurrency: "unbounded" }).pipe(
        Effect.provide(service(layer))
      )
      assert.strictEqual(seen.length, 1)
      assert.strictEqual(seen[0]!.url, "https://api.example/api/Server/Token")
      assert.strictEqual(seen[0]!.body, JSON.stringify({ ApplicationId: APPLICATION_ID }))
      assert.isTrue(tokens.every((token) => token.generation === 1))
      assert.strictEqual(Redacted.value(tokens[0]!.authorization), "Bearer tok-1")
      assert.notInclude(JSON.stringify(tokens[0]), "tok-1")
      assert.strictEqual(tokens[0]!.lifetimeMillis, HOUR)
    }))

  it.effect("in the soft window the current token is served at once and one refresh runs behind it", () =>
    Effect.gen(function*() {
      const { layer, seen } = endpoint()
      yield* Effect.gen(function*() {
        assert.strictEqual((yield* get).generation, 1)
        yield* TestClock.adjust(HOUR - 4 * 60_000)
        assert.strictEqual((yield* get).generation, 1)
        yield* Effect.yieldNow
        assert.strictEqual(seen.length, 2)
        assert.strictEqual((yield* get).generation, 2)
      }).pipe(Effect.provide(service(layer)))
    }))

  it.effect("a 429 with Retry-After: callers fail fast with it, counted down, and nothing is sent until it passes", () =>
    Effect.gen(function*() {
      const { layer, seen } = endpoint((n) =>
        n === 1 ? HttpTransport.jsonResponse(429, "", { "Retry-After": "10" }) : undefined
      )
      yield* Effect.gen(function*() {
        const first = yield* Effect.flip(get)
        assert.strictEqual(first._tag, "RateLimited")
        yield* TestClock.adjust(4000)
        const second = yield* Effect.flip(get)
        assert.strictEqual(second._tag, "RateLimited")
        if (second._tag === "RateLimited") assert.strictEqual(second.retryAfterMillis, 6000)
        assert.strictEqual(seen.length, 1)
        yield* TestClock.adjust(6000)
        assert.strictEqual((yield* get).generation, 1)
        assert.strictEqual(seen.length, 2)
      }).pipe(Effect.provide(service(layer)))
    }))

  it.effect("invalidate drops the cached token, and a late invalidation of an older one changes nothing", () =>
    Effect.gen(function*() {
      const { layer, seen } = endpoint()
      yield* Effect.gen(function*() {
        const tokens = yield* TokenService.TokenService
        const first = yield* tokens.get
        yield* tokens.invalidate(first)
        const second = yield* tokens.get
        assert.strictEqual(second.generation, 2)
        yield* tokens.invalidate(first)
        assert.strictEqual((yield* tokens.get).generation, 2)
        assert.strictEqual(seen.length, 2)
      }).pipe(Effect.provide(service(layer)))
    }))

  it.effect("getWithin: a token endpoint slower than the wait fails with Deadline; a wait that is no duration is refused", () =>
    Effect.gen(function*() {
      const layer = HttpTransport.layerMemory(() => Effect.never)
      yield* Effect.gen(function*() {
        const tokens = yield* TokenService.TokenService
        const fiber = yield* Effect.forkChild(Effect.exit(tokens.getWithin("2 seconds")))
        yield* TestClock.adjust(2000)
        const exit = yield* Fiber.join(fiber)
        assert.isTrue(Exit.isFailure(exit))
        const error = yield* Effect.flip(Exit.isFailure(exit) ? Effect.failCause(exit.cause) : Effect.never)
        assert.strictEqual(error._tag, "TransportError")
        if (error._tag === "TransportError") assert.strictEqual(error.detail, "no token within 2000 ms")
        const refused = yield* Effect.flip(tokens.getWithin(-1))
        assert.strictEqual(refused._tag, "InvalidRequest")
      }).pipe(Effect.provide(service(layer)))
    }))
})
