/**
 * What of the hostile-server suite is the Effect 3 line's alone. The rest, what the client does
 * with a broken or hostile server through each transport and call path, is one specification for
 * both lines (spec/hostile.ts, run here by test/HostileSpec.test.ts).
 *
 * Left here: the abort signal `layerHttpClient` hands the application's own `@effect/platform`
 * client (built with `HttpClient.make`) fires when the attempt times out. It is about the adapter's
 * wiring into this line's `HttpClient` contract, seen only from inside a client the test writes in
 * that line's API; no server or user sees it.
 */
import { HttpClient, HttpClientError } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { ClinicalClient, HttpTransport, TokenService } from "effect-clinical"
import * as Hostile from "./support/HostileServer.js"

describe("layerHttpClient: timeouts (from review)", () => {
  it.scopedLive("the timeout fires the abort signal the client was handed, and the call ends in Timeout", () =>
    Effect.gen(function*() {
      const server = yield* Hostile.serve((_, res) => Hostile.answerToken(res))
      const aborted: Array<unknown> = []
      // A client that answers only when its signal fires, as every @effect/platform client does.
      const listening = Layer.succeed(
        HttpClient.HttpClient,
        HttpClient.make((request, _url, signal) =>
          Effect.async((resume) => {
            signal.addEventListener("abort", () => {
              aborted.push(signal.reason)
              resume(
                Effect.fail(new HttpClientError.RequestError({ request, reason: "Transport", cause: signal.reason }))
              )
            })
          })
        )
      )
      const client = ClinicalClient.layer({
        baseUrl: server.url,
        applicationId: Hostile.APPLICATION_ID,
        tokenTimeout: "1 second",
        maxRetries: 0
      }).pipe(Layer.provide(HttpTransport.layerHttpClient), Layer.provide(listening))
      const started = Date.now()
      const error = yield* Effect.flip(TokenService.get.pipe(Effect.provide(client)))
      expect(error).toMatchObject({ _tag: "TransportError", reason: "Timeout", operation: "token" })
      expect(aborted).toHaveLength(1)
      expect(Date.now() - started).toBeLessThan(3_000)
      expect(server.received).toHaveLength(0)
    }))
})
