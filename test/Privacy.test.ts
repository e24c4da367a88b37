/**
 * The token, the ApplicationId and the PersonUid never appear in a log line, an error's message or
 * JSON, a failure's cause, or a span attribute: checked on real captured output of every flow.
 */
import { FetchHttpClient } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Inspectable, Layer, Redacted, Schema, TestClock } from "effect"
import { ClinicalClient, HttpTransport, MedicationService, TokenService } from "effect-clinical"
import { MockClinicalServer } from "effect-clinical/testing"
import * as Util from "node:util"
import * as CapturingTracer from "./support/CapturingTracer.js"
import * as Fake from "./support/FakeService.js"
import { captureLogs, everyForm, expectNone, FORMS } from "./support/Leaks.js"

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
/**
 * What a server echoing the whole request writes: its body and headers, and each secret alone, in
 * every form (percent-encoded twice, HTML-escaped, JSON inside JSON, base64, ...).
 */
const echo = (request: HttpTransport.TransportRequest) => {
  const body = HttpTransport.wireBody(request) ?? ""
  const headers = HttpTransport.wireHeaders(request)
  const parsed = JSON.parse(body) as Record<string, string>
  return everyForm([body, JSON.stringify(headers), ...Object.values(headers), ...Object.values(parsed)])
}

const flows: ReadonlyArray<readonly [string, Flow]> = [
  ["success, with the user logging the token and the result", () =>
    Effect.gen(function*() {
      const token = yield* TokenService.get
      yield* Effect.log("token", token, "person", Redacted.make(Fake.PERSON_UID))
      const result = yield* MedicationService.get(Redacted.make(Fake.PERSON_UID), { startDate: "2024-01-01" })
      yield* Effect.log("got", result.medications.length)
    })],
  ["401 then success", (fake) => Effect.zipRight(fake.scriptData(Fake.respond(401, {})), get)],
  ["401 twice", (fake) => Effect.zipRight(fake.scriptData(Fake.respond(401, {}), Fake.respond(401, {})), get)],
  ["419 twice", (fake) => Effect.zipRight(fake.scriptData(Fake.respond(419, {}), Fake.respond(419, {})), get)],
  ["revoked tokens", (fake) => Effect.zipRight(Effect.zipRight(get, fake.revokeAll), get)],
  ["soft and hard window refreshes", () =>
    Effect.gen(function*() {
      yield* get
      yield* TestClock.adjust("57 minutes")
      yield* get
      yield* TestClock.adjust("3 hours")
      yield* get
    })],
  ["Success: false echoing every secret", (fake) =>
    Effect.zipRight(
      fake.scriptData((request) =>
        Effect.succeed(
          HttpTransport.jsonResponse(200, { Success: false, ErrorType: echo(request), ErrorMessage: echo(request) })
        )
      ),
      get
    )],
  ...[400, 404, 405, 429, 500, 503].map((status): readonly [string, Flow] => [
    `data HTTP ${status} echoing every secret`,
    (fake) =>
      Effect.zipRight(
        fake.scriptData((request) => Effect.succeed(HttpTransport.jsonResponse(status, { Message: echo(request) }))),
        get
      )
  ]),
  ...[400, 401, 429, 500].map((status): readonly [string, Flow] => [
    `token HTTP ${status} echoing every secret`,
    (fake) =>
      Effect.zipRight(
        fake.scriptToken((request) => Effect.succeed(HttpTransport.jsonResponse(status, { Message: echo(request) }))),
        get
      )
  ]),
  [
    "a data body that is not JSON but echoes every secret",
    (fake) =>
      Effect.zipRight(
        fake.scriptData((request) => Effect.succeed({ status: 200, headers: {}, body: echo(request) })),
        get
      )
  ],
  ["a data body of the wrong shape holding every secret", (fake) =>
    Effect.zipRight(
      fake.scriptData((request) =>
        Effect.succeed(HttpTransport.jsonResponse(200, { Medications: echo(request), Success: true }))
      ),
      get
    )],
  ["a caller's Schema refusing items that hold every secret", (fake) =>
    Effect.zipRight(
      fake.scriptData((request) =>
        Effect.succeed(HttpTransport.jsonResponse(200, { Medications: [{ Name: 1, Note: echo(request) }] }))
      ),
      MedicationService.getAs(Schema.Struct({ Name: Schema.String }), Fake.PERSON_UID)
    )],
  ["a token of the wrong type echoing the ApplicationId", (fake) =>
    Effect.zipRight(
      fake.scriptToken((request) =>
        Effect.succeed(HttpTransport.jsonResponse(200, { Token: echo(request), TokenType: Fake.tokenValue(3) }))
      ),
      get
    )],
  ["a transport failure whose detail holds every secret", (fake) =>
    Effect.zipRight(
      fake.scriptData((request) => Effect.fail(HttpTransport.transportError(request, "Network", echo(request)))),
      get
    )],
  [
    "a token transport failure naming the ApplicationId alone, in lower case (a host it was sent to)",
    (fake) =>
      Effect.zipRight(
        // Every attempt fails, so the call ends in this error (and its detail).
        fake.scriptToken(...Array.from({ length: 4 }, (): Fake.Responder => (request) =>
          Effect.fail(
            HttpTransport.transportError(
              request,
              "Network",
              `getaddrinfo ENOTFOUND ${Fake.APPLICATION_ID.toLowerCase()}.invalid`
            )
          ))),
        get
      )
  ],
  ["a transport failure whose detail holds the bare token, without its Bearer (from review)", (fake) =>
    Effect.zipRight(
      // Every attempt fails, so the call ends in this error (and its detail).
      fake.scriptData(...Array.from({ length: 4 }, (): Fake.Responder => (request) =>
        Effect.fail(
          HttpTransport.transportError(
            request,
            "Network",
            `socket said token=${HttpTransport.wireHeader(request, "authorization")!.slice("Bearer ".length)}`
          )
        ))),
      get
    )],
  ["a token transport failure whose detail holds the ApplicationId", (fake) =>
    Effect.zipRight(
      fake.scriptToken((request) => Effect.fail(HttpTransport.transportError(request, "Network", echo(request)))),
      get
    )],
  ["a timeout", (fake) =>
    Effect.gen(function*() {
      yield* fake.scriptData(() => Effect.never)
      const fiber = yield* Effect.fork(get)
      yield* TestClock.adjust("1 minute")
      return yield* fiber
    })],
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
    )],
  // One form at a time: an error keeps 500 characters, and each form must be seen within them.
  ...FORMS.flatMap(([form, write]): ReadonlyArray<readonly [string, Flow]> => {
    const echoed = (request: HttpTransport.TransportRequest) => {
      const body = HttpTransport.wireBody(request) ?? ""
      const headers = HttpTransport.wireHeaders(request)
      const values = [...Object.values(JSON.parse(body) as Record<string, string>), ...Object.values(headers), body]
      return values.flatMap(write).join(" ")
    }
    return [
      [`Success: false echoing every secret, ${form}`, (fake) =>
        Effect.zipRight(
          fake.scriptData((request) =>
            Effect.succeed(
              HttpTransport.jsonResponse(400, {
                Success: false,
                ErrorType: echoed(request),
                ErrorMessage: echoed(request)
              })
            )
          ),
          get
        )],
      [`the token host's Success: false echoing the ApplicationId, ${form}`, (fake) =>
        Effect.zipRight(
          fake.scriptToken((request) =>
            Effect.succeed(HttpTransport.jsonResponse(400, { Success: false, ErrorMessage: echoed(request) }))
          ),
          get
        )],
      [`a transport failure whose detail holds every secret, ${form}`, (fake) =>
        Effect.zipRight(
          fake.scriptData(...Array.from({ length: 4 }, (): Fake.Responder => (request) =>
            Effect.fail(HttpTransport.transportError(request, "Network", echoed(request))))),
          get
        )]
    ]
  }),
  ["a PersonUid refused for a CR/LF", () => MedicationService.get(`${Fake.PERSON_UID}\r\n`)],
  ["a PersonUid refused for its length", () => MedicationService.get(Fake.PERSON_UID.repeat(100))],
  ["a PersonUid refused for a space", () => MedicationService.get(`${Fake.PERSON_UID} ${Fake.APPLICATION_ID}`)]
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

  it.effect("a refused ApplicationId never appears in the layer's error or the logs", () =>
    Effect.gen(function*() {
      const { layer, lines } = captureLogs()
      const fake = yield* Fake.make()
      const leaked = `${Fake.APPLICATION_ID}\r\nX-Injected: yes`
      const exit = yield* get.pipe(
        Effect.provide(Fake.clientLayer(fake, { applicationId: leaked })),
        Effect.tapErrorCause((cause) => Effect.logError("layer failed", cause)),
        Effect.provide(layer),
        Effect.exit
      )
      expect(Exit.isFailure(exit)).toBe(true)
      for (const line of lines) expectNoSecret("log line", line)
      if (Exit.isFailure(exit)) expectNoSecret("cause", Cause.pretty(exit.cause))
    }))
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
