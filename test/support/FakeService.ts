/**
 * A small scripted stand-in for the service, served through `HttpTransport.layerMemory`. It issues
 * tokens, checks them on data requests (401 unknown, 419 expired) and records every request as it
 * would go on the wire. Tests queue exact responses with `scriptToken` / `scriptData`.
 */
import { Clock, type Duration, Effect, type Either, Fiber, Layer, Option, Random, Ref, TestClock } from "effect"
import { ClinicalClient, type ClinicalConfig, type ClinicalError, HttpDate, HttpTransport } from "effect-clinical"

import { APPLICATION_ID, BASE_URL, MEDICATION_PATH, TOKEN_PATH, tokenValue } from "../../spec/fakeService.js"

// The shared specification's fake (spec/fakeService.ts) and this one serve the same names and tokens.
export {
  APPLICATION_ID,
  BASE_URL,
  MEDICATION_PATH,
  PERSON_UID,
  TOKEN_PATH,
  tokenValue
} from "../../spec/fakeService.js"
export const AUTH_URL = "https://openapiauthtest.intelichart.com"

export const MEDICATIONS = [
  { Name: "Lisinopril", Strength: "10 mg", Instructions: "1 tablet daily", StartDate: "2024-01-05", Code: "314076" },
  { Name: "Metformin", Strength: "500 mg", Instructions: "twice daily with meals", StartDate: "2023-06-12" }
]

/** The fake's answer to a medications request with a good token. */
export const MEDICATIONS_ANSWER = HttpTransport.jsonResponse(200, {
  Medications: MEDICATIONS,
  Success: true,
  ErrorMessage: null,
  ErrorType: null
})

/** Jitter fixed at the middle: a retry waits 3/4 of its exponential step (750 ms, 1.5 s, 3 s, ...). */
export const middleJitter = Effect.withRandom(Random.fixed([0.5]))

/** Each call's outcome: its error's tag, or "Right". */
export const outcomeTags = (results: ReadonlyArray<Either.Either<unknown, { readonly _tag: string }>>) =>
  results.map((result) => result._tag === "Left" ? result.left._tag : "Right")

export interface Recorded {
  /** Test clock time (ms) the request arrived. */
  readonly at: number
  readonly method: string
  readonly url: string
  readonly path: string
  readonly headers: Record<string, string>
  readonly body: string | undefined
}

export type Responder = (
  request: HttpTransport.TransportRequest
) => Effect.Effect<HttpTransport.TransportResponse, ClinicalError.TransportError>

export interface FakeServiceOptions {
  /** Token lifetime on the server. Default one hour. */
  readonly lifetimeMillis?: number
  /** Server clock minus the test clock. Default 0. */
  readonly serverClockOffsetMillis?: number
  /** Send a `Date` header with tokens. Default true. */
  readonly sendDate?: boolean
}

export const make = (options: FakeServiceOptions = {}) =>
  Effect.gen(function*() {
    const requests = yield* Ref.make<ReadonlyArray<Recorded>>([])
    const tokens = yield* Ref.make<ReadonlyMap<string, number>>(new Map())
    const issued = yield* Ref.make(0)
    const tokenScript = yield* Ref.make<ReadonlyArray<Responder>>([])
    const dataScript = yield* Ref.make<ReadonlyArray<Responder>>([])
    const lifetime = options.lifetimeMillis ?? 60 * 60 * 1000
    const offset = options.serverClockOffsetMillis ?? 0

    const serverNow = Effect.map(Clock.currentTimeMillis, (now) => now + offset)

    const nextScripted = (script: Ref.Ref<ReadonlyArray<Responder>>) =>
      Ref.modify(script, (queue): [Responder | undefined, ReadonlyArray<Responder>] => [queue[0], queue.slice(1)])

    const issueToken = Effect.gen(function*() {
      const n = yield* Ref.updateAndGet(issued, (k) => k + 1)
      const now = yield* serverNow
      const token = tokenValue(n)
      yield* Ref.update(tokens, (map) => new Map([...map, [token, now + lifetime]]))
      return HttpTransport.jsonResponse(200, { Token: token, TokenType: "Bearer" }, {
        TOKEN_EXPIRES: HttpDate.format(now + lifetime),
        ...(options.sendDate === false ? {} : { Date: HttpDate.format(now) }),
        "Cache-Control": "no-cache",
        Pragma: "no-cache",
        Expires: "-1"
      })
    })

    const medications = (request: HttpTransport.TransportRequest) =>
      Effect.gen(function*() {
        const authorization = HttpTransport.wireHeader(request, "authorization") ?? ""
        const expiry = (yield* Ref.get(tokens)).get(authorization.replace(/^Bearer /, ""))
        if (expiry === undefined) return HttpTransport.jsonResponse(401, { Message: "Authorization has been denied." })
        if ((yield* serverNow) >= expiry) return HttpTransport.jsonResponse(419, { Message: "Token expired." })
        return MEDICATIONS_ANSWER
      })

    const handler = (request: HttpTransport.TransportRequest) =>
      Effect.gen(function*() {
        const path = new URL(request.url).pathname
        const at = yield* Clock.currentTimeMillis
        yield* Ref.update(requests, (all) => [...all, {
          at,
          method: request.method,
          url: request.url,
          path,
          headers: HttpTransport.wireHeaders(request),
          body: HttpTransport.wireBody(request)
        }])
        const isToken = path.toLowerCase().endsWith(TOKEN_PATH.toLowerCase())
        const scripted = yield* nextScripted(isToken ? tokenScript : dataScript)
        if (scripted !== undefined) return yield* scripted(request)
        return yield* (isToken ? issueToken : medications(request))
      })

    const recorded = Ref.get(requests)
    return {
      layer: HttpTransport.layerMemory(handler),
      handler,
      requests: recorded,
      tokenRequests: Effect.map(recorded, (all) => all.filter((r) => r.path.endsWith(TOKEN_PATH))),
      dataRequests: Effect.map(recorded, (all) => all.filter((r) => r.path.endsWith(MEDICATION_PATH))),
      issueToken,
      /** Queue responses for the next token requests, in order. */
      scriptToken: (...responders: ReadonlyArray<Responder>) => Ref.update(tokenScript, (q) => [...q, ...responders]),
      /** Queue responses for the next data requests, in order. */
      scriptData: (...responders: ReadonlyArray<Responder>) => Ref.update(dataScript, (q) => [...q, ...responders]),
      /** Forget every issued token (as a server that revoked them would). */
      revokeAll: Ref.set(tokens, new Map())
    }
  })

export type FakeService = Effect.Effect.Success<ReturnType<typeof make>>

/** A responder that answers with a fixed JSON response. */
export const respond = (status: number, body: unknown, headers: Record<string, string> = {}): Responder => () =>
  Effect.succeed(HttpTransport.jsonResponse(status, body, headers))

/** `count` responders each answering `status` with an empty JSON object. */
export const answering = (status: number, count: number): ReadonlyArray<Responder> =>
  Array.from({ length: count }, () => respond(status, {}))

export const clientOptions = {
  baseUrl: BASE_URL,
  authUrl: AUTH_URL,
  applicationId: APPLICATION_ID
} as const

/** The whole client over a fake service, with optional settings on top of the test defaults. */
export const clientLayer = (fake: FakeService, overrides: Partial<ClinicalConfig.Options> = {}) =>
  ClinicalClient.layer({ ...clientOptions, ...overrides }).pipe(Layer.provide(fake.layer))

/** Runs `body` against a fresh fake service and a fresh client (settings and fake options optional). */
export const withClient = <A, E>(
  body: (fake: FakeService) => Effect.Effect<A, E, ClinicalClient.Services>,
  overrides: Partial<ClinicalConfig.Options> = {},
  fakeOptions: FakeServiceOptions = {}
) =>
  Effect.gen(function*() {
    const fake = yield* make(fakeOptions)
    return yield* body(fake).pipe(Effect.provide(clientLayer(fake, overrides)))
  })

/**
 * Runs `effect` to its end under `TestClock`, moving the clock a step at a time so that backoff
 * sleeps and timeouts fire. Fails the test if it has not ended after `maxSteps` steps.
 */
export const runWithClock = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  step: Duration.DurationInput | ((nowMillis: number) => number) = "100 millis",
  maxSteps = 10_000
) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(effect)
    for (let i = 0; i < maxSteps; i++) {
      const done = yield* Fiber.poll(fiber)
      if (Option.isSome(done)) return yield* Fiber.join(fiber)
      yield* TestClock.adjust(typeof step === "function" ? step(yield* Clock.currentTimeMillis) : step)
    }
    return yield* Effect.dieMessage(`still running after ${maxSteps} clock steps`)
  })
