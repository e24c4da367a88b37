/**
 * What the token store's tests share (test/TokenStore*.test.ts): clients of one process over a
 * store given them, a fleet of two instances, the store key of the fake service, and the TestClock
 * run forward in steps.
 */
import { Effect, Layer, Redacted, TestClock } from "effect"
import { type ClinicalClient, TokenService, TokenStore } from "effect-clinical"
import * as StoredEntry from "../../src/internal/token/storedEntry.js"
import * as Fake from "./FakeService.js"

export const SECOND = 1000
// Tests driven by the TestClock through many steps (400 in the rotating-lease tests): seconds of
// CPU alone, longer beside the suite's other files; no real time is waited for.
export const CPU_BOUND_MILLIS = 60_000
export const MINUTE = 60 * SECOND

export type Client = Layer.Layer<ClinicalClient.Services, unknown>

/** A client over `fake` whose token store is `store` (shared with any other client given it). */
export const clientOver = (fake: Fake.FakeService, store: TokenStore.Service, overrides = {}): Client =>
  Fake.clientLayer(fake, overrides).pipe(Layer.provide(Layer.succeed(TokenStore.TokenStore, store)))

/** A fake service, and a memory store whose lease a holder ("stuck") keeps for 10 minutes without publishing. */
export const stuckHolder = Effect.gen(function*() {
  const fake = yield* Fake.make()
  const shared = TokenStore.memory()
  yield* shared.acquireLease(storeKey, "stuck", 10 * MINUTE)
  return { fake, shared }
})

/** Builds `client` once and returns a runner of effects against that one instance. */
export const instance = (client: Client) =>
  Effect.map(
    Layer.build(client),
    (context) => <A, E>(effect: Effect.Effect<A, E, ClinicalClient.Services>) => Effect.provide(effect, context)
  )

/** A fake service and two instances over `store` (a fleet of two). */
export const twoInstancesOver = <S extends TokenStore.Service>(store: S) =>
  Effect.gen(function*() {
    const fake = yield* Fake.make()
    const a = yield* instance(clientOver(fake, store))
    const b = yield* instance(clientOver(fake, store))
    return { a, b, fake, store }
  })

/** The same over a fresh in-memory store. */
export const twoInstances = Effect.suspend(() => twoInstancesOver(TokenStore.memory()))

/** Lets forked fibers run until they block. */
export const settle = Effect.gen(function*() {
  for (let i = 0; i < 20; i++) yield* Effect.yieldNow()
})

export const storeKey = TokenService.storeKey(
  {
    baseUrl: Fake.BASE_URL,
    authUrl: Fake.AUTH_URL,
    tokenPath: Fake.TOKEN_PATH,
    applicationId: Redacted.make(Fake.APPLICATION_ID)
  } as Parameters<typeof TokenService.storeKey>[0]
)

export const valueOf = (token: TokenService.AccessToken) => Redacted.value(token.token)

/** A store entry of `token` with an hour's lifetime and no clock skew. */
export const entryOf = (token: string): StoredEntry.Entry => ({
  token: Redacted.make(token),
  lifetimeMillis: 60 * MINUTE,
  serverLifetimeMillis: 60 * MINUTE,
  serverClockSkewMillis: undefined
})

/** Runs the clock forward in steps, letting forked fibers run between them. */
export const runClock = (steps: number, stepMillis: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < steps; i++) {
      yield* settle
      yield* TestClock.adjust(stepMillis)
    }
    yield* settle
  })
