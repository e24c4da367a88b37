import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, FiberRef, Option, TestClock } from "effect"
import {
  type ClinicalClient,
  ClinicalError,
  HttpDate,
  HttpTransport,
  MedicationService,
  TokenService
} from "effect-clinical"
import * as Fake from "./support/FakeService.js"

const HOUR = 60 * 60 * 1000
const MINUTE = 60 * 1000

/** A fresh fake service and client; the fake's options first here, as most tests set those. */
const withTokens = <A, E>(
  body: (fake: Fake.FakeService) => Effect.Effect<A, E, ClinicalClient.Services>,
  fakeOptions: Fake.FakeServiceOptions = {},
  overrides: Parameters<typeof Fake.clientLayer>[1] = {}
) => Fake.withClient(body, overrides, fakeOptions)

/** A token responder that waits for `gate` before the fake service issues the token. */
const gated = (fake: Fake.FakeService, gate: Deferred.Deferred<void>): Fake.Responder => () =>
  Effect.zipRight(Deferred.await(gate), fake.issueToken)

/** Lets forked fibers (a background refresh) run until they block. */
const settle = Effect.gen(function*() {
  for (let i = 0; i < 10; i++) yield* Effect.yieldNow()
})

/**
 * Lets forked fibers run (yielding, no clock) until `count` token requests were made, then checks
 * that there are exactly that many. Waits for the event, not for a fixed number of yields.
 */
const expectTokenRequests = (fake: Fake.FakeService, count: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < 1_000 && (yield* fake.tokenRequests).length < count; i++) yield* Effect.yieldNow()
    yield* settle
    expect(yield* fake.tokenRequests).toHaveLength(count)
  })

const isDone = <A, E>(fiber: Fiber.RuntimeFiber<A, E>) =>
  Effect.zipRight(settle, Effect.map(Fiber.poll(fiber), Option.isSome))

describe("TokenService single flight", () => {
  it.effect("1,000 concurrent get calls on a cold cache make exactly one token request", () =>
    withTokens((fake) =>
      Effect.gen(function*() {
        const gate = yield* Deferred.make<void>()
        yield* fake.scriptToken(gated(fake, gate))
        const fiber = yield* Effect.fork(
          Effect.all(Array.from({ length: 1000 }, () => TokenService.get), { concurrency: "unbounded" })
        )
        expect(yield* isDone(fiber)).toBe(false)
        yield* Deferred.succeed(gate, undefined)
        const tokens = yield* Fiber.join(fiber)
        expect(new Set(tokens.map((t) => t.generation))).toEqual(new Set([1]))
        expect(yield* fake.tokenRequests).toHaveLength(1)
      })
    ))

  it.effect("1,000 concurrent medication calls on a cold cache make exactly one token request", () =>
    withTokens((fake) =>
      Effect.gen(function*() {
        const results = yield* Effect.all(
          Array.from({ length: 1000 }, () => MedicationService.get(Fake.PERSON_UID)),
          { concurrency: "unbounded" }
        )
        expect(results).toHaveLength(1000)
        expect(yield* fake.tokenRequests).toHaveLength(1)
        expect(yield* fake.dataRequests).toHaveLength(1000)
      })
    ))

  it.effect("a cached token is reused until its soft window", () =>
    withTokens((fake) =>
      Effect.gen(function*() {
        const first = yield* TokenService.get
        yield* TestClock.adjust(54 * MINUTE)
        const second = yield* TokenService.get
        expect(second).toBe(first)
        expect(yield* fake.tokenRequests).toHaveLength(1)
      })
    ))
})

describe("TokenService refresh windows", () => {
  it.effect("in the soft window the current token is served at once while one background refresh runs", () =>
    withTokens((fake) =>
      Effect.gen(function*() {
        const first = yield* TokenService.get
        const gate = yield* Deferred.make<void>()
        yield* fake.scriptToken(gated(fake, gate))
        yield* TestClock.adjust(56 * MINUTE) // 4 minutes left: inside the 5-minute soft window
        const during = yield* Effect.all(Array.from({ length: 20 }, () => TokenService.get), {
          concurrency: "unbounded"
        })
        expect(during.every((t) => t.generation === first.generation)).toBe(true)
        expect(yield* fake.tokenRequests).toHaveLength(2) // the first, and one background refresh
        yield* Deferred.succeed(gate, undefined)
        yield* settle
        const after = yield* TokenService.get
        expect(after.generation).toBe(2)
        expect(after.expiresAt).toBe(56 * MINUTE + HOUR)
        expect(yield* fake.tokenRequests).toHaveLength(2)
      })
    ))

  it.effect("in the hard window callers wait for the new token", () =>
    withTokens((fake) =>
      Effect.gen(function*() {
        yield* TokenService.get
        const gate = yield* Deferred.make<void>()
        yield* fake.scriptToken(gated(fake, gate))
        yield* TestClock.adjust(HOUR - 20_000) // 20 seconds left: inside the 30-second hard window
        const waiting = yield* Effect.fork(
          Effect.all(Array.from({ length: 10 }, () => TokenService.get), { concurrency: "unbounded" })
        )
        expect(yield* isDone(waiting)).toBe(false)
        yield* Deferred.succeed(gate, undefined)
        const tokens = yield* Fiber.join(waiting)
        expect(tokens.every((t) => t.generation === 2)).toBe(true)
        expect(yield* fake.tokenRequests).toHaveLength(2)
      })
    ))

  it.effect("an expired token is never returned: callers wait for a new one", () =>
    withTokens((fake) =>
      Effect.gen(function*() {
        yield* TokenService.get
        yield* TestClock.adjust(2 * HOUR)
        const token = yield* TokenService.get
        expect(yield* fake.tokenRequests).toHaveLength(2)
        expect(token.generation).toBe(2)
        expect(token.expiresAt).toBe(3 * HOUR)
      })
    ))

  it.effect("windows shrink with short lifetimes: half and a tenth of the lifetime", () =>
    withTokens(
      (fake) =>
        Effect.gen(function*() {
          const gate = yield* Deferred.make<void>()
          yield* TokenService.get // 60 s lifetime: soft window 30 s, hard window 6 s
          yield* TestClock.adjust(29_000)
          expect((yield* TokenService.get).generation).toBe(1)
          expect(yield* fake.tokenRequests).toHaveLength(1)
          yield* fake.scriptToken(gated(fake, gate))
          yield* TestClock.adjust(2_000) // 29 s left: soft window
          expect((yield* TokenService.get).generation).toBe(1)
          yield* expectTokenRequests(fake, 2)
          yield* TestClock.adjust(24_000) // 5 s left: hard window, the refresh is still in flight
          const waiting = yield* Effect.fork(TokenService.get)
          expect(yield* isDone(waiting)).toBe(false)
          yield* Deferred.succeed(gate, undefined)
          expect((yield* Fiber.join(waiting)).generation).toBe(2)
          expect(yield* fake.tokenRequests).toHaveLength(2)
        }),
      { lifetimeMillis: 60_000 },
      { tokenTimeout: "1 minute" } // the gated refresh must outlive the 24 s jump
    ))

  it.effect("configured windows are used", () =>
    withTokens(
      (fake) =>
        Effect.gen(function*() {
          yield* TokenService.get
          yield* TestClock.adjust(49 * MINUTE)
          yield* TokenService.get
          expect(yield* fake.tokenRequests).toHaveLength(1)
          yield* TestClock.adjust(2 * MINUTE) // 9 minutes left: inside a 10-minute soft window
          yield* TokenService.get
          yield* expectTokenRequests(fake, 2)
        }),
      {},
      { softRefreshWindow: "10 minutes", hardRefreshWindow: "1 minute" }
    ))
})

describe("TokenService failures", () => {
  it.effect("a failed refresh is not cached: the next caller tries again", () =>
    withTokens((fake) =>
      Effect.gen(function*() {
        yield* fake.scriptToken(Fake.respond(500, { Message: "boom" }))
        const error = yield* Effect.flip(TokenService.get)
        expect(error).toEqual(
          new ClinicalError.ServerError({
            operation: "token",
            method: "POST",
            url: `${Fake.AUTH_URL}${Fake.TOKEN_PATH}`,
            status: 500
          })
        )
        const token = yield* TokenService.get
        expect(token.generation).toBe(1)
        expect(yield* fake.tokenRequests).toHaveLength(2)
      })
    ))

  it.effect("a failed background refresh is retried with backoff while callers keep the current token", () =>
    withTokens((fake) =>
      Effect.gen(function*() {
        const first = yield* TokenService.get
        yield* fake.scriptToken(Fake.respond(503, {}), Fake.respond(500, {}))
        yield* TestClock.adjust(56 * MINUTE) // soft window: the refresh starts in the background
        expect(yield* TokenService.get).toBe(first)
        yield* expectTokenRequests(fake, 2)
        // Callers in the soft window keep the current token and start nothing new.
        expect(yield* TokenService.get).toBe(first)
        yield* expectTokenRequests(fake, 2)
        // Backoff: the first retry comes after 0.5 to 1 s (base 1 s, equal jitter), the second after 1 to 2 s.
        yield* TestClock.adjust(1_000)
        yield* expectTokenRequests(fake, 3)
        yield* TestClock.adjust(2_000)
        yield* expectTokenRequests(fake, 4)
        expect((yield* TokenService.get).generation).toBe(2)
      })
    ))

  it.effect("a background refresh that keeps failing surfaces only at the hard window", () =>
    withTokens(
      (fake) =>
        Effect.gen(function*() {
          const first = yield* TokenService.get
          const failing = Array.from({ length: 50 }, () => Fake.respond(503, {}))
          yield* fake.scriptToken(...failing)
          yield* TestClock.adjust(56 * MINUTE)
          for (let minute = 0; minute < 3; minute++) {
            expect(yield* TokenService.get).toBe(first)
            yield* TestClock.adjust(MINUTE)
          }
          yield* TestClock.adjust(30_000) // 59 min 30 s: the hard window
          const error = yield* Effect.flip(TokenService.get)
          expect(error).toMatchObject({ _tag: "ServerError", operation: "token", status: 503 })
          // Backed off all along (1, 2, 4, ... s, capped at 30 s, jittered): about 15 requests in
          // three and a half minutes, not one per caller.
          const requests = (yield* fake.tokenRequests).length
          expect(requests).toBeGreaterThan(8)
          expect(requests).toBeLessThan(25)
        }),
      {},
      { retryMaxDelay: "30 seconds" }
    ))

  it.effect("a background refresh refused with a 4xx is not retried; callers keep the token until the hard window", () =>
    withTokens((fake) =>
      Effect.gen(function*() {
        const first = yield* TokenService.get
        yield* fake.scriptToken(Fake.respond(401, {}), Fake.respond(401, {}))
        yield* TestClock.adjust(56 * MINUTE)
        expect(yield* TokenService.get).toBe(first)
        yield* settle
        yield* TestClock.adjust(3 * MINUTE)
        expect(yield* TokenService.get).toBe(first)
        yield* expectTokenRequests(fake, 2)
        yield* TestClock.adjust(45_000) // the hard window: a caller now waits, and sees the refusal
        expect(yield* Effect.flip(TokenService.get)).toMatchObject({ _tag: "Unauthorized", operation: "token" })
        expect(yield* fake.tokenRequests).toHaveLength(3)
      })
    ))

  it.effect("an interrupted caller does not cancel the refresh others wait on", () =>
    withTokens((fake) =>
      Effect.gen(function*() {
        const gate = yield* Deferred.make<void>()
        yield* fake.scriptToken(gated(fake, gate))
        const impatient = yield* Effect.fork(TokenService.get)
        const patient = yield* Effect.fork(TokenService.get)
        expect(yield* isDone(impatient)).toBe(false)
        yield* Fiber.interrupt(impatient)
        yield* Deferred.succeed(gate, undefined)
        expect((yield* Fiber.join(patient)).generation).toBe(1)
        expect(yield* fake.tokenRequests).toHaveLength(1)
      })
    ))

  it.effect("a caller interrupted at any point of its decision never causes a second token request", () =>
    Effect.gen(function*() {
      // Small scheduler slices make the interruption land inside the decision itself.
      for (const maxOps of [12, 24]) {
        for (let yields = 0; yields < 30; yields++) {
          const fake = yield* Fake.make()
          yield* fake.scriptToken(() => Effect.zipRight(Effect.sleep("10 millis"), fake.issueToken))
          yield* Effect.gen(function*() {
            const first = yield* Effect.fork(
              Effect.locally(TokenService.get, FiberRef.currentMaxOpsBeforeYield, maxOps)
            )
            for (let i = 0; i < yields; i++) yield* Effect.yieldNow()
            yield* Fiber.interrupt(first)
            const second = yield* Effect.fork(TokenService.get)
            yield* TestClock.adjust("1 second")
            yield* Fiber.join(second)
          }).pipe(Effect.provide(Fake.clientLayer(fake)))
          expect(yield* fake.tokenRequests, `maxOps ${maxOps}, ${yields} yields`).toHaveLength(1)
        }
      }
    }))

  it.effect("a caller that times out does not cancel the refresh", () =>
    withTokens((fake) =>
      Effect.gen(function*() {
        yield* fake.scriptToken(() => Effect.zipRight(Effect.sleep("3 seconds"), fake.issueToken))
        const impatient = yield* Effect.fork(Effect.timeout(TokenService.get, "1 second"))
        yield* TestClock.adjust("1 second")
        expect((yield* Effect.flip(Fiber.join(impatient)))._tag).toBe("TimeoutException")
        yield* TestClock.adjust("2 seconds")
        expect((yield* TokenService.get).generation).toBe(1)
        expect(yield* fake.tokenRequests).toHaveLength(1)
      })
    ))

  it.effect("a token request slower than tokenTimeout is a Timeout TransportError", () =>
    withTokens(
      (fake) =>
        Effect.gen(function*() {
          yield* fake.scriptToken(() => Effect.never)
          const fiber = yield* Effect.fork(Effect.flip(TokenService.get))
          yield* TestClock.adjust("5 seconds")
          expect(yield* Fiber.join(fiber)).toMatchObject({
            _tag: "TransportError",
            reason: "Timeout",
            operation: "token"
          })
        }),
      {},
      { tokenTimeout: "5 seconds" }
    ))

  const statuses: ReadonlyArray<readonly [number, string]> = [
    [400, "BadRequest"],
    [401, "Unauthorized"],
    [405, "UnexpectedStatus"],
    [419, "TokenExpired"],
    [429, "RateLimited"],
    [500, "ServerError"],
    [503, "ServerError"]
  ]
  for (const [status, tag] of statuses) {
    it.effect(`token endpoint HTTP ${status} gives ${tag} for the token operation (retries off)`, () =>
      withTokens(
        (fake) =>
          Effect.gen(function*() {
            yield* fake.scriptToken(Fake.respond(status, { Message: "no" }))
            const error = yield* Effect.flip(MedicationService.get(Fake.PERSON_UID))
            expect(error).toMatchObject({ _tag: tag, operation: "token", status })
            expect(yield* fake.tokenRequests).toHaveLength(1)
            expect(yield* fake.dataRequests).toHaveLength(0)
          }),
        {},
        { maxRetries: 0 }
      ))
  }

  it.effect("getWithin bounds the wait for a token being fetched; a cached one comes at once", () =>
    withTokens(
      (fake) =>
        Effect.gen(function*() {
          const gate = yield* Deferred.make<void>()
          yield* fake.scriptToken(gated(fake, gate))
          const bounded = yield* Effect.fork(Effect.flip(TokenService.getWithin("2 seconds")))
          const patient = yield* Effect.fork(TokenService.get)
          yield* TestClock.adjust("2 seconds")
          expect(yield* Fiber.join(bounded)).toMatchObject({
            _tag: "TransportError",
            reason: "Deadline",
            operation: "token"
          })
          yield* Deferred.succeed(gate, undefined)
          const token = yield* Fiber.join(patient)
          expect(yield* TokenService.getWithin(0)).toBe(token)
          expect(yield* fake.tokenRequests).toHaveLength(1)
        }),
      {},
      { tokenTimeout: "1 minute" }
    ))

  it.effect("invalidate drops only the token that is still cached", () =>
    withTokens((fake) =>
      Effect.gen(function*() {
        const first = yield* TokenService.get
        yield* TokenService.invalidate(first)
        const second = yield* TokenService.get
        expect(second.generation).toBe(2)
        yield* TokenService.invalidate(first) // stale: a no-op
        expect(yield* TokenService.get).toBe(second)
        expect(yield* fake.tokenRequests).toHaveLength(2)
      })
    ))
})

describe("TokenService expiry from the server's clock", () => {
  for (const offset of [HOUR, -HOUR]) {
    it.effect(`a server clock ${offset > 0 ? "ahead" : "behind"} by one hour changes nothing`, () =>
      withTokens(
        (fake) =>
          Effect.gen(function*() {
            yield* TestClock.setTime(Date.UTC(2026, 10, 22, 8))
            const token = yield* TokenService.get
            expect(token.lifetimeMillis).toBe(HOUR)
            expect(token.expiresAt).toBe(Date.UTC(2026, 10, 22, 9))
            expect(token.serverClockSkewMillis).toBe(offset)
            yield* TestClock.adjust(50 * MINUTE)
            expect(yield* TokenService.get).toBe(token)
            const result = yield* MedicationService.get(Fake.PERSON_UID)
            expect(result.medications).toHaveLength(2)
            expect(yield* fake.tokenRequests).toHaveLength(1)
          }),
        { serverClockOffsetMillis: offset }
      ))
  }

  it.effect("the lifetime counts from when the request was sent, not when the answer came", () =>
    withTokens((fake) =>
      Effect.gen(function*() {
        yield* fake.scriptToken(() => Effect.zipRight(Effect.sleep("2 seconds"), fake.issueToken))
        const fiber = yield* Effect.fork(TokenService.get)
        yield* TestClock.adjust("2 seconds")
        const token = yield* Fiber.join(fiber)
        expect(token.issuedAt).toBe(0)
        expect(token.expiresAt).toBe(HOUR)
      })
    ))

  it.effect("without a Date header, TOKEN_EXPIRES is read against the local clock", () =>
    withTokens(
      () =>
        Effect.gen(function*() {
          yield* TestClock.setTime(Date.UTC(2026, 10, 22, 8))
          const token = yield* TokenService.get
          expect(token.expiresAt).toBe(Date.UTC(2026, 10, 22, 9))
          expect(token.serverClockSkewMillis).toBeUndefined()
        }),
      { sendDate: false }
    ))

  const tokenHeaders = (expires: string | undefined, date: string | undefined) => ({
    ...(expires === undefined ? {} : { TOKEN_EXPIRES: expires }),
    ...(date === undefined ? {} : { Date: date })
  })
  const now = "Sun, 22 Nov 2026 08:00:00 GMT"
  const bad: ReadonlyArray<readonly [string, Record<string, string>, string]> = [
    ["a missing TOKEN_EXPIRES", tokenHeaders(undefined, now), "TOKEN_EXPIRES header is missing"],
    ["an unparseable TOKEN_EXPIRES", tokenHeaders("2026-11-22T09:00:00Z", now), "not an HTTP date"],
    ["a TOKEN_EXPIRES equal to Date", tokenHeaders(now, now), "lifetime is not positive"],
    ["a TOKEN_EXPIRES before Date", tokenHeaders("Sun, 22 Nov 2026 07:00:00 GMT", now), "lifetime is not positive"]
  ]
  for (const [name, headers, reason] of bad) {
    it.effect(`${name} is a ResponseDecodeError`, () =>
      withTokens((fake) =>
        Effect.gen(function*() {
          yield* fake.scriptToken(Fake.respond(200, { Token: Fake.tokenValue(9), TokenType: "Bearer" }, headers))
          const error = yield* Effect.flip(TokenService.get)
          expect(error).toMatchObject({ _tag: "ResponseDecodeError", operation: "token", status: 200 })
          expect(error.message).toContain(reason)
        })
      ))
  }

  it.effect("the alternative header spelling TOKEN-EXPIRES and the RFC 850 and asctime forms are read", () =>
    withTokens((fake) =>
      Effect.gen(function*() {
        yield* TestClock.setTime(Date.UTC(2026, 10, 22, 8))
        yield* fake.scriptToken(
          Fake.respond(200, { Token: Fake.tokenValue(1), TokenType: "Bearer" }, {
            "Token-Expires": "Sunday, 22-Nov-26 08:30:00 GMT",
            Date: "Sun Nov 22 08:00:00 2026"
          })
        )
        expect((yield* TokenService.get).lifetimeMillis).toBe(30 * MINUTE)
      })
    ))
})

describe("TokenService response body", () => {
  const headers = { TOKEN_EXPIRES: HttpDate.format(HOUR), Date: HttpDate.format(0) }

  it.effect("TokenType is matched case-insensitively and field names tolerate camelCase", () =>
    withTokens((fake) =>
      Effect.gen(function*() {
        yield* fake.scriptToken(Fake.respond(200, { token: Fake.tokenValue(1), tokenType: "bearer" }, headers))
        const token = yield* TokenService.get
        expect(token.generation).toBe(1)
      })
    ))

  const refused: ReadonlyArray<readonly [string, unknown, string]> = [
    ["a TokenType other than Bearer", { Token: "secret-tok", TokenType: "Basic" }, "body.TokenType"],
    ["a missing Token", { TokenType: "Bearer" }, "body.Token"],
    ["an empty Token", { Token: "", TokenType: "Bearer" }, "body.Token"],
    ["a Token with CR/LF", { Token: "secret-tok\r\nX-Evil: 1", TokenType: "Bearer" }, "body.Token"],
    ["a Token that is not a string", { Token: 12345, TokenType: "Bearer" }, "body.Token"],
    ["an array body", [{ Token: "secret-tok" }], "not a JSON object"]
  ]
  for (const [name, body, reason] of refused) {
    it.effect(`${name} is a ResponseDecodeError that does not echo the body`, () =>
      withTokens((fake) =>
        Effect.gen(function*() {
          yield* fake.scriptToken(Fake.respond(200, body, headers))
          const error = yield* Effect.flip(TokenService.get)
          expect(error._tag).toBe("ResponseDecodeError")
          expect(error.message).toContain(reason)
          expect(String(error)).not.toContain("secret-tok")
          expect(JSON.stringify(error)).not.toContain("secret-tok")
        })
      ))
  }

  it.effect("a non-JSON token body is a ResponseDecodeError", () =>
    withTokens((fake) =>
      Effect.gen(function*() {
        yield* fake.scriptToken(() => Effect.succeed({ status: 200, headers, body: "<html/>" }))
        expect((yield* Effect.flip(TokenService.get)).message).toContain("the body is not JSON")
      })
    ))

  it.effect("an envelope with Success: false from the token endpoint is an ApiError", () =>
    withTokens((fake) =>
      Effect.gen(function*() {
        yield* fake.scriptToken(
          Fake.respond(200, { Success: false, ErrorType: "Denied", ErrorMessage: `unknown ${Fake.APPLICATION_ID}` })
        )
        const error = yield* Effect.flip(TokenService.get)
        expect(error).toEqual(
          new ClinicalError.ApiError({
            operation: "token",
            method: "POST",
            url: `${Fake.AUTH_URL}${Fake.TOKEN_PATH}`,
            status: 200,
            errorType: "Denied",
            errorMessage: "unknown <redacted>"
          })
        )
      })
    ))

  it.effect("the Authorization value is Bearer plus the token, kept redacted", () =>
    withTokens(() =>
      Effect.gen(function*() {
        const token = yield* TokenService.get
        expect(String(token.authorization)).toBe("<redacted>")
        expect(
          HttpTransport.wireHeaders({ method: "POST", url: "http://localhost/", headers: { a: token.authorization } })
        )
          .toEqual({ a: `Bearer ${Fake.tokenValue(1)}` })
      })
    ))
})
