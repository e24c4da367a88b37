/**
 * The token, the ApplicationId and the PersonUid never appear in a log line, an error's message or
 * JSON, a failure's cause, or a span attribute: checked on real captured output. The flows both
 * lines share are the specification's (spec/privacy.ts, run by PrivacySpec.test.ts); here are the
 * Effect 3 line's own: a transport that logs what it is given, and the spans.
 */
import { FetchHttpClient } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Inspectable, Layer, Redacted } from "effect"
import { ClinicalClient, HttpTransport, MedicationService, TokenService } from "effect-clinical"
import { MockClinicalServer } from "effect-clinical/testing"
import * as Util from "node:util"
import * as CapturingTracer from "./support/CapturingTracer.js"
import * as Fake from "./support/FakeService.js"
import { captureLogs, expectNone } from "./support/Leaks.js"

const SECRETS: ReadonlyArray<string> = [
  Fake.APPLICATION_ID,
  Fake.PERSON_UID,
  ...Array.from({ length: 20 }, (_, i) => Fake.tokenValue(i + 1))
]

/** No secret in any form a server or a logger could write it (see `Leaks.forms`). */
const expectNoSecret = (label: string, text: string, secrets: ReadonlyArray<string> = SECRETS) =>
  expectNone(label, text, secrets)

type Flow = (
  fake: Fake.FakeService
) => Effect.Effect<unknown, unknown, MedicationService.MedicationService | TokenService.TokenService>

const get = MedicationService.get(Fake.PERSON_UID)
const flows: ReadonlyArray<readonly [string, Flow]> = [
  ["a transport logging every request it is given, whole, in every form", (fake) =>
    Effect.zipRight(
      fake.scriptData((request) =>
        Effect.gen(function*() {
          yield* Effect.log("request", request, JSON.stringify(request), String(request.body), `${request.body}`)
          yield* Effect.log(Util.inspect(request, { depth: 8, showHidden: true, getters: true }))
          yield* Effect.log(Inspectable.format(request), Inspectable.format(request.body))
          // The body is an Effect Redacted, as for every transport that reads it so.
          const body = request.body
          if (body === undefined || typeof body === "string" || !Redacted.isRedacted(body)) {
            return yield* Effect.die("the body is not Redacted")
          }
          expect(JSON.parse(Redacted.value(body))).toEqual({ personuid: Fake.PERSON_UID })
          return HttpTransport.jsonResponse(200, { Medications: [], Success: true })
        })
      ),
      get
    )]
]

describe("no secret in logs, errors or causes", () => {
  for (const [name, flow] of flows) {
    it.effect(name, () =>
      Effect.gen(function*() {
        const { layer, lines } = captureLogs()
        const fake = yield* Fake.make()
        // Retries on, with the clock driven: retry and refresh logs are captured too.
        const exit = yield* flow(fake).pipe(
          Effect.provide(Fake.clientLayer(fake)),
          Effect.tapErrorCause((cause) => Effect.logError("flow failed", cause)),
          Effect.provide(layer),
          Effect.exit,
          Fake.runWithClock
        )
        expect(lines.length).toBeGreaterThan(0)
        for (const line of lines) expectNoSecret("log line", line)
        if (Exit.isFailure(exit)) {
          expectNoSecret("cause", Cause.pretty(exit.cause, { renderErrorCause: true }))
          expectNoSecret("cause JSON", JSON.stringify(exit.cause))
          for (const error of Cause.failures(exit.cause)) {
            expectNoSecret("String(error)", String(error))
            expectNoSecret("JSON.stringify(error)", JSON.stringify(error))
            expectNoSecret("inspect(error)", Inspectable.format(error))
            expectNoSecret("error.stack", (error as Error).stack ?? "")
          }
        }
      }))
  }
})

describe("no secret in span attributes", () => {
  it.scopedLive("through @effect/platform's HttpClient, whose own span (recording every header) is turned off", () =>
    Effect.gen(function*() {
      const { spans, tracer } = yield* CapturingTracer.make
      const mock = yield* MockClinicalServer.make({ applicationIds: [Fake.APPLICATION_ID] })
      const baseUrl = yield* MockClinicalServer.serve(mock)
      const person = MockClinicalServer.fixturePersons[0]!.personUid
      yield* MedicationService.get(person).pipe(
        Effect.provide(ClinicalClient.layer({ baseUrl, applicationId: Fake.APPLICATION_ID })),
        Effect.provide(HttpTransport.layerHttpClient.pipe(Layer.provide(FetchHttpClient.layer))),
        Effect.withTracer(tracer)
      )
      const attributes = spans.flatMap((span) => [...span.attributes.entries()])
      // One span per attempt, ours: the platform records no header, and adds no propagation header.
      expect(attributes.map(([key]) => key).filter((key) => key.includes("header"))).toEqual([])
      expect(spans.filter((span) => span.kind === "client").map((span) => span.attributes.get("url.full")))
        .toEqual([`${baseUrl}/api/Server/Token`, `${baseUrl}/api/clinical/medication/get`])
      const sentHeaders = (yield* mock.requestLog).flatMap((entry) => Object.keys(entry.headers))
      expect(sentHeaders.filter((name) => /traceparent|b3/i.test(name))).toEqual([])
      const issued = (yield* mock.requestLog).flatMap((entry) => entry.headers.authorization ?? [])
      expect(issued).toHaveLength(1)
      const secrets = [...SECRETS, person, issued[0]!.slice("Bearer ".length)]
      for (const [key, value] of attributes) expectNoSecret(`span attribute ${key}`, String(value), secrets)
    }))
})
