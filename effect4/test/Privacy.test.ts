/**
 * The Effect 4 line's own privacy checks, beside the shared specification (PrivacySpec.test.ts):
 * a transport that logs every request it is given, whole and in every way, logs no secret, and
 * the body it gets is a `Redacted`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Formatter, Layer, Logger, Redacted, References } from "effect"
import * as Util from "node:util"
import { APPLICATION_ID, FakeService, PERSON_UID, tokenValue } from "../../spec/fakeService.js"
import { leakIn } from "../../spec/secretForms.js"
import * as ClinicalClient from "../src/ClinicalClient.js"
import * as HttpTransport from "../src/HttpTransport.js"
import * as MedicationService from "../src/MedicationService.js"

describe("privacy (Effect 4's own)", () => {
  it.effect("a transport logging every request it is given, whole, in every form, logs no secret", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const bodies: Array<unknown> = []
      const fake = new FakeService()
      const transport = HttpTransport.layerMemory((request) =>
        Effect.gen(function*() {
          yield* Effect.log("request", request, JSON.stringify(request), String(request.body), `${request.body}`)
          yield* Effect.log(Util.inspect(request, { depth: 8, showHidden: true, getters: true }))
          yield* Effect.log(Formatter.format(request), Formatter.format(request.body))
          bodies.push(request.body)
          const reply = fake.handle({
            method: request.method,
            url: request.url,
            headers: HttpTransport.wireHeaders(request),
            body: HttpTransport.wireBody(request)
          }, yield* Clock.currentTimeMillis)
          return reply._tag === "Respond" ? reply.response : yield* Effect.die("the fake did not answer")
        })
      )
      yield* MedicationService.get(PERSON_UID).pipe(
        Effect.provide(
          ClinicalClient.layer({ baseUrl: "https://api.example", applicationId: APPLICATION_ID }).pipe(
            Layer.provide(transport)
          )
        ),
        Effect.provide(
          Layer.mergeAll(
            Logger.layer([Logger.map(Logger.formatLogFmt, (line) => void lines.push(line))]),
            Layer.succeed(References.MinimumLogLevel, "All")
          )
        )
      )
      assert.isAbove(lines.length, 5)
      for (const line of lines) assert.isUndefined(leakIn(line, [APPLICATION_ID, PERSON_UID, tokenValue(1)]), line)
      // Both bodies (the token request's, the data request's) are Redacted, the data one the PersonUid's.
      assert.strictEqual(bodies.length, 2)
      for (const body of bodies) assert.isTrue(Redacted.isRedacted(body))
      assert.deepStrictEqual(JSON.parse(Redacted.value(bodies[1] as Redacted.Redacted<string>)), {
        personuid: PERSON_UID
      })
    }))
})
