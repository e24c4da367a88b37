/**
 * What the Network*.test.ts files share: the private PKI and the tinyproxy each file starts
 * (`startPkiAndProxy`, whose `pki` and `proxy` are set for that file's tests), and one call of an
 * effect on a fresh client of a mock through the default transport, with its typed failure; and a
 * proxy URL read as the transport reads it.
 */
import { Cause, Effect, Either, Exit, Layer, Option } from "effect"
import { ClinicalClient, HttpTransport, MedicationService } from "effect-clinical"
import type { MockClinicalServer } from "effect-clinical/testing"
import { afterAll, beforeAll, expect } from "vitest"
import * as Network from "../../src/internal/transport/network.js"
import * as Proxy from "../../src/internal/transport/proxy.js"
import { fromNetwork } from "../../src/internal/transport/undici.js"
import * as Pki from "./Pki.js"
import * as Tinyproxy from "./Tinyproxy.js"

export let pki: Pki.Pki
export let proxy: Tinyproxy.Tinyproxy

/** Makes the PKI and starts tinyproxy before the file's tests; stops and removes them after. */
export const startPkiAndProxy = (): void => {
  beforeAll(async () => {
    pki = Pki.make()
    proxy = await Tinyproxy.start()
  }, 30_000)
  afterAll(async () => {
    await proxy?.stop()
    pki?.remove()
  })
}

export type Env = Readonly<Record<string, string>>

/** The default transport over `options`, reading `env` where it would read the process's environment. */
export const transport = (options: HttpTransport.UndiciOptions, env: Env) =>
  Layer.scoped(HttpTransport.HttpTransport, Effect.map(Network.acquire(options, env), fromNetwork))

/** One call of `effect` on a fresh client of `mock` (no retries: each failure is the first one). */
export const call = <A, E>(
  mock: MockClinicalServer.Started,
  effect: Effect.Effect<A, E, ClinicalClient.Services>,
  options: HttpTransport.UndiciOptions = {},
  env: Env = {}
) =>
  Effect.runPromiseExit(
    effect.pipe(
      Effect.provide(
        ClinicalClient.layer({ baseUrl: mock.url, applicationId: mock.applicationId, maxRetries: 0 }).pipe(
          Layer.provide(transport(options, env))
        )
      )
    )
  )

export const medications = (mock: MockClinicalServer.Started) => MedicationService.get(mock.persons[0]!.personUid)

/** The typed failure of an exit, for `toMatchObject`. */
export const failureOf = (exit: Exit.Exit<unknown, unknown>): unknown =>
  Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined

export const expectFailure = (exit: Exit.Exit<unknown, unknown>, expected: object) => {
  expect(failureOf(exit)).toMatchObject(expected)
}

/** The proxy URL `text` read, or a throw. */
export const endpoint = (text: string) => Either.getOrThrow(Proxy.proxyEndpoint(text))
