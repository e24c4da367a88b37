/**
 * Authenticate: pass code and date of birth to PersonUid. What goes over the wire, how the answer
 * is read, which inputs are refused before sending, when the request is (never) sent again, and
 * that the pass code, the date of birth and the PersonUid never leak.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, ConfigProvider, Effect, Exit, Layer, Option, Redacted, TestClock } from "effect"
import { ClinicalClient, HttpTransport, PersonAuthentication, PersonData } from "effect-clinical"
import * as CapturingTracer from "./support/CapturingTracer.js"
import * as Fake from "./support/FakeService.js"
import * as Leaks from "./support/Leaks.js"

const PASS_CODE = "EW-2719-KQ"
const PERSON_UID = "AuthenticatedUid+/Person==9f8e7d"
const AUTHENTICATE_PATH = "/api/Server/Authenticate"

const authenticate = (dateOfBirth: PersonAuthentication.Credentials["dateOfBirth"] = "1945-03-14") =>
  PersonAuthentication.authenticate({ passCode: PASS_CODE, dateOfBirth })

const authenticateRequests = (fake: Fake.FakeService) =>
  Effect.map(fake.requests, (all) => all.filter((r) => r.path === AUTHENTICATE_PATH))

const answer = (body: unknown, status = 200) => Fake.respond(status, body)

const failureOf = <A, E>(exit: Exit.Exit<A, E>): E => {
  if (Exit.isSuccess(exit)) throw new Error("expected a failure, got a success")
  return Option.getOrThrowWith(Cause.failureOption(exit.cause), () => new Error(Cause.pretty(exit.cause)))
}

describe("PersonAuthentication wire format", () => {
  it.effect("POSTs the ApplicationId, pass code and date of birth (MM/DD/YYYY) with the token; returns the PersonUid redacted", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        yield* fake.scriptData(answer({ PersonUid: PERSON_UID, Success: true, ErrorMessage: null, ErrorType: null }))
        const uid = yield* authenticate()
        expect(Redacted.isRedacted(uid)).toBe(true)
        expect(Redacted.value(uid)).toBe(PERSON_UID)
        expect(String(uid)).not.toContain(PERSON_UID)
        const [token, request] = yield* fake.requests
        expect(token!.path).toBe("/api/Server/Token")
        expect(request).toEqual({
          at: 0,
          method: "POST",
          url: `${Fake.BASE_URL}${AUTHENTICATE_PATH}`,
          path: AUTHENTICATE_PATH,
          headers: {
            "Content-Type": "application/json",
            "Accept-Encoding": "identity",
            Authorization: `Bearer ${Fake.tokenValue(1)}`,
            ApplicationId: Fake.APPLICATION_ID
          },
          body: JSON.stringify({ ApplicationId: Fake.APPLICATION_ID, PassCode: PASS_CODE, DateOfBirth: "03/14/1945" })
        })
      })
    ))

  it.effect("authenticateUrl and authenticatePath move the operation (the docs show it on both hosts)", () =>
    Fake.withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* fake.scriptData(answer({ PersonUid: PERSON_UID }))
          yield* authenticate()
          const requests = yield* fake.requests
          expect(requests[1]!.url).toBe(`${Fake.AUTH_URL}/api/server/authenticate`)
        }),
      { authenticateUrl: `${Fake.AUTH_URL}/`, authenticatePath: "/api/server/authenticate" }
    ))

  it.effect("reads PersonUid in any letter case, in the envelope or bare", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        const bodies = [
          { PersonUid: PERSON_UID, Success: true },
          { personuid: PERSON_UID },
          { PERSONUID: PERSON_UID, success: "true" }
        ]
        yield* fake.scriptData(...bodies.map((body) => answer(body)))
        for (const _ of bodies) expect(Redacted.value(yield* authenticate())).toBe(PERSON_UID)
      })
    ))

  it.effect("a wrong pass code or date of birth is whatever the service answers: ApiError with its ErrorType, or BadRequest", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        yield* fake.scriptData(
          answer(
            { PersonUid: null, Success: false, ErrorType: "AuthenticationFailed", ErrorMessage: "Not found." },
            400
          ),
          answer({ Success: false, ErrorType: "AuthenticationFailed", ErrorMessage: "Not found." }),
          answer({ Message: "The request is invalid." }, 400)
        )
        expect(yield* Effect.flip(authenticate())).toMatchObject({
          _tag: "ApiError",
          operation: "authenticate",
          status: 400,
          errorType: "AuthenticationFailed"
        })
        expect(yield* Effect.flip(authenticate())).toMatchObject({ _tag: "ApiError", status: 200 })
        expect(yield* Effect.flip(authenticate())).toMatchObject({ _tag: "BadRequest", operation: "authenticate" })
      })
    ))

  it.effect("an answer without a usable PersonUid is a ResponseDecodeError that never echoes it", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        const bad = `${PERSON_UID}\r\nX-Injected: 1`
        yield* fake.scriptData(answer({ Success: true }), answer({ PersonUid: bad }), answer({ PersonUid: 42 }))
        for (const reason of ["has no PersonUid", "not a usable identifier", "not a usable identifier"]) {
          const error = yield* Effect.flip(authenticate())
          expect(error).toMatchObject({ _tag: "ResponseDecodeError", operation: "authenticate" })
          expect(error.message).toContain(reason)
          expect(String(error)).not.toContain(PERSON_UID)
        }
      })
    ))
})

describe("PersonAuthentication inputs", () => {
  const dates: ReadonlyArray<readonly [string, PersonAuthentication.Credentials["dateOfBirth"], string]> = [
    ["a YYYY-MM-DD string", "1945-03-14", "03/14/1945"],
    ["an MM/DD/YYYY string", "03/14/1945", "03/14/1945"],
    ["a Date, by its UTC day", new Date(Date.UTC(1945, 2, 14, 23, 30)), "03/14/1945"],
    ["a Redacted string", Redacted.make("1945-03-14"), "03/14/1945"],
    ["the last day of a leap February", "2000-02-29", "02/29/2000"]
  ]
  for (const [title, dateOfBirth, sent] of dates) {
    it.effect(`date of birth as ${title} is sent as ${sent}`, () =>
      Fake.withClient((fake) =>
        Effect.gen(function*() {
          yield* TestClock.setTime(Date.UTC(2026, 10, 23))
          yield* fake.scriptData(answer({ PersonUid: PERSON_UID }))
          yield* authenticate(dateOfBirth)
          expect(JSON.parse((yield* authenticateRequests(fake))[0]!.body!).DateOfBirth).toBe(sent)
        })
      ))
  }

  for (const [format, sent] of [["YYYY-MM-DD", "1945-03-14"], ["DD.MM.YYYY", "14.03.1945"]] as const) {
    it.effect(`dateOfBirthFormat ${format} writes ${sent}`, () =>
      Fake.withClient(
        (fake) =>
          Effect.gen(function*() {
            yield* fake.scriptData(answer({ PersonUid: PERSON_UID }))
            yield* authenticate("03/14/1945")
            expect(JSON.parse((yield* authenticateRequests(fake))[0]!.body!).DateOfBirth).toBe(sent)
          }),
        { dateOfBirthFormat: format }
      ))
  }

  it.effect("a date of birth that is not a real day, not in a known form, or in the future is refused before sending", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        yield* TestClock.setTime(Date.UTC(2026, 10, 23, 12))
        const refused: ReadonlyArray<unknown> = [
          "1945-02-30",
          "02/30/1945",
          "14/03/1945",
          "1945/03/14",
          "3/14/1945",
          "0000-01-01",
          "",
          "2026-11-25",
          new Date(Number.NaN),
          19450314,
          undefined
        ]
        for (const dateOfBirth of refused) {
          const credentials = { passCode: PASS_CODE, dateOfBirth: dateOfBirth as string }
          const error = failureOf(yield* Effect.exit(PersonAuthentication.authenticate(credentials)))
          expect(error, String(dateOfBirth)).toMatchObject({
            _tag: "InvalidRequest",
            operation: "authenticate",
            field: "dateOfBirth"
          })
        }
        expect(yield* fake.requests).toHaveLength(0)
        // Today is no future anywhere, nor is tomorrow in UTC+14 while it is today in UTC.
        yield* fake.scriptData(answer({ PersonUid: PERSON_UID }), answer({ PersonUid: PERSON_UID }))
        yield* authenticate("2026-11-23")
        yield* authenticate("2026-11-24")
      })
    ))

  it.effect("a pass code that is empty, not printable, too long or not a string is refused before sending, never echoed", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        const refused: ReadonlyArray<unknown> = [
          "",
          "   ",
          "EW-2719\nKQ",
          "EW\u0000KQ",
          // Invisible format characters a paste can bring: a zero-width space, a direction override.
          "EW\u200b2719",
          "\u202eEW2719",
          "x".repeat(257),
          2719,
          undefined
        ]
        for (const passCode of refused) {
          const error = failureOf(
            yield* Effect.exit(
              PersonAuthentication.authenticate({ passCode: passCode as string, dateOfBirth: "1945-03-14" })
            )
          )
          expect(error).toMatchObject({ _tag: "InvalidRequest", field: "passCode" })
          if (typeof passCode === "string" && passCode.trim().length > 3) expect(String(error)).not.toContain(passCode)
        }
        const missing = failureOf(yield* Effect.exit(PersonAuthentication.authenticate(undefined as never)))
        expect(missing).toMatchObject({ _tag: "InvalidRequest", field: "credentials" })
        expect(yield* fake.requests).toHaveLength(0)
        // Spaces, non-ASCII and a Redacted value are fine.
        yield* fake.scriptData(answer({ PersonUid: PERSON_UID }), answer({ PersonUid: PERSON_UID }))
        yield* PersonAuthentication.authenticate({ passCode: "mot de passe é", dateOfBirth: "1945-03-14" })
        yield* PersonAuthentication.authenticate({ passCode: Redacted.make(PASS_CODE), dateOfBirth: "1945-03-14" })
        expect(JSON.parse((yield* authenticateRequests(fake))[0]!.body!).PassCode).toBe("mot de passe é")
      })
    ))
})

describe("PersonAuthentication is never sent again once the server may have acted on it", () => {
  const notResent: ReadonlyArray<readonly [string, Fake.Responder, string]> = [
    ["a 503", Fake.respond(503, {}), "ServerError"],
    ["a 500", Fake.respond(500, {}), "ServerError"],
    ["a 429", Fake.respond(429, {}, { "Retry-After": "1" }), "RateLimited"],
    [
      "a reset connection",
      (request) => Effect.fail(HttpTransport.transportError(request, "Network", "ECONNRESET: socket hang up")),
      "TransportError"
    ]
  ]
  for (const [title, responder, tag] of notResent) {
    it.effect(`${title}: one request, then ${tag}`, () =>
      Fake.withClient((fake) =>
        Effect.gen(function*() {
          yield* fake.scriptData(responder, answer({ PersonUid: PERSON_UID }))
          const error = yield* Effect.flip(Fake.runWithClock(authenticate()))
          expect(error._tag).toBe(tag)
          expect(yield* authenticateRequests(fake)).toHaveLength(1)
        })
      ))
  }

  it.effect("an attempt timeout: one request, then a Timeout", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        yield* fake.scriptData(() => Effect.never, answer({ PersonUid: PERSON_UID }))
        const error = yield* Effect.flip(Fake.runWithClock(authenticate(), "1 second"))
        expect(error).toMatchObject({ _tag: "TransportError", reason: "Timeout", operation: "authenticate" })
        expect(yield* authenticateRequests(fake)).toHaveLength(1)
      })
    ))

  it.effect("a refused connection (the request surely never arrived) is sent again, and succeeds", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        yield* fake.scriptData(
          (request) => Effect.fail(HttpTransport.transportError(request, "Network", "ECONNREFUSED", false)),
          answer({ PersonUid: PERSON_UID })
        )
        expect(Redacted.value(yield* Fake.runWithClock(authenticate()))).toBe(PERSON_UID)
        expect(yield* authenticateRequests(fake)).toHaveLength(2)
      })
    ))

  it.effect("a token endpoint failure comes before anything is sent: it is retried, then authenticate is sent once", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        yield* fake.scriptToken(Fake.respond(503, {}))
        yield* fake.scriptData(answer({ PersonUid: PERSON_UID }))
        yield* Fake.runWithClock(authenticate())
        expect(yield* fake.tokenRequests).toHaveLength(2)
        expect(yield* authenticateRequests(fake)).toHaveLength(1)
      })
    ))

  for (const status of [401, 419]) {
    it.effect(`a ${status}: the token is refreshed once and the request sent once more`, () =>
      Fake.withClient((fake) =>
        Effect.gen(function*() {
          yield* fake.scriptData(Fake.respond(status, {}), answer({ PersonUid: PERSON_UID }))
          expect(Redacted.value(yield* authenticate())).toBe(PERSON_UID)
          expect(yield* fake.tokenRequests).toHaveLength(2)
          const sent = yield* authenticateRequests(fake)
          expect(sent.map((r) => r.headers.Authorization)).toEqual([
            `Bearer ${Fake.tokenValue(1)}`,
            `Bearer ${Fake.tokenValue(2)}`
          ])
        })
      ))
  }

  it.effect("a second 401 is Unauthorized, after exactly two requests", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        yield* fake.scriptData(Fake.respond(401, {}), Fake.respond(401, {}), answer({ PersonUid: PERSON_UID }))
        expect(yield* Effect.flip(authenticate())).toMatchObject({ _tag: "Unauthorized", operation: "authenticate" })
        expect(yield* authenticateRequests(fake)).toHaveLength(2)
      })
    ))
})

describe("PersonAuthentication privacy", () => {
  const secrets = [
    PASS_CODE,
    "03/14/1945",
    "1945-03-14",
    "3/14/1945",
    "-783302400000",
    "Wednesday, March 14, 1945",
    "14.03.1945",
    PERSON_UID,
    Fake.APPLICATION_ID
  ]

  const echo = (request: HttpTransport.TransportRequest) => {
    const body = JSON.parse(HttpTransport.wireBody(request)!)
    return `${body.PassCode} ${body.PassCode.toLowerCase()} ${
      encodeURIComponent(body.PassCode)
    } ${body.DateOfBirth} 1945-03-14 3/14/1945 12:00:00 AM ${body.ApplicationId}`
  }

  const flows: ReadonlyArray<readonly [string, Fake.Responder]> = [
    ["success", answer({ PersonUid: PERSON_UID })],
    [
      "Success: false echoing the credentials",
      (request) =>
        Effect.succeed(
          HttpTransport.jsonResponse(400, { Success: false, ErrorType: echo(request), ErrorMessage: echo(request) })
        )
    ],
    [
      "a 500 echoing the credentials",
      (request) => Effect.succeed(HttpTransport.jsonResponse(500, { Message: echo(request) }))
    ],
    [
      "a network error whose detail echoes them",
      (request) => Effect.fail(HttpTransport.transportError(request, "Network", echo(request)))
    ],
    ["a PersonUid that is not usable", answer({ PersonUid: `${PERSON_UID} ${PASS_CODE}` })],
    // One form at a time (an error keeps 500 characters): the pass code, the date of birth, the
    // ApplicationId and the whole body, and the date as .NET reformats it.
    ...Leaks.FORMS.map(([form, write]): readonly [string, Fake.Responder] => [
      `Success: false echoing the credentials, ${form}`,
      (request) => {
        const wire = HttpTransport.wireBody(request)!
        const body = JSON.parse(wire)
        const echoed = [body.PassCode, body.DateOfBirth, body.ApplicationId, wire].flatMap(write)
        return Effect.succeed(
          HttpTransport.jsonResponse(400, { Success: false, ErrorType: "Refused", ErrorMessage: echoed.join(" | ") })
        )
      }
    ]),
    [
      "Success: false echoing the date of birth as .NET writes it",
      () =>
        Effect.succeed(HttpTransport.jsonResponse(400, {
          Success: false,
          ErrorMessage:
            "born /Date(-783302400000)/, \\/Date(-783298800000+0100)\\/, Wednesday, March 14, 1945, 14.03.1945"
        }))
    ]
  ]
  for (const [title, responder] of flows) {
    it.effect(`${title}: nothing in logs, errors or spans`, () =>
      Effect.gen(function*() {
        const { layer, lines } = Leaks.captureLogs()
        const { spans, tracer } = yield* CapturingTracer.make
        const fake = yield* Fake.make()
        yield* fake.scriptData(responder)
        const exit = yield* authenticate().pipe(
          Effect.tap((uid) => Effect.log("authenticated", uid)),
          Effect.provide(Fake.clientLayer(fake)),
          Effect.tapErrorCause((cause) => Effect.logError("failed", cause)),
          Effect.provide(layer),
          Effect.withTracer(tracer),
          Effect.exit,
          Fake.runWithClock
        )
        expect(lines.length).toBeGreaterThan(0)
        for (const line of lines) Leaks.expectNone("log line", line, secrets)
        Leaks.expectNoneInExit(exit, secrets)
        for (const span of spans) {
          Leaks.expectNone(`span ${span.name}`, JSON.stringify([...span.attributes.entries()]), secrets)
        }
        expect(spans.map((span) => span.name)).toContain("PersonAuthentication.authenticate")
      }))
  }
})

describe("PersonAuthentication in ClinicalClient", () => {
  it.effect("all four ClinicalClient layers provide PersonAuthentication and PersonData", () =>
    Effect.gen(function*() {
      const fake = yield* Fake.make()
      const environment = ConfigProvider.fromMap(
        new Map([["CLINICAL_BASE_URL", Fake.BASE_URL], ["CLINICAL_APPLICATION_ID", Fake.APPLICATION_ID]])
      )
      const layers = [
        ClinicalClient.layer(Fake.clientOptions).pipe(Layer.provide(fake.layer)),
        ClinicalClient.layerConfig.pipe(Layer.provide(fake.layer)),
        ClinicalClient.layerUndici(Fake.clientOptions),
        ClinicalClient.layerUndiciConfig()
      ]
      for (const layer of layers) {
        const services = yield* Effect.all([PersonAuthentication.PersonAuthentication, PersonData.PersonData]).pipe(
          Effect.provide(layer),
          Effect.withConfigProvider(environment)
        )
        expect(services.map((service) => Object.keys(service).sort())).toEqual([["authenticate"], [
          "get",
          "getAs",
          "getMany"
        ]])
      }
    }))
})

describe("PersonAuthentication: what the mutation run found unasserted (issue 24)", () => {
  it.effect("credentials that are not an object, and a date of birth in the future, are refused with their reason", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        yield* TestClock.setTime(Date.UTC(2026, 10, 23, 12))
        for (const credentials of [null, undefined, "EW-2719-KQ"]) {
          const error = failureOf(yield* Effect.exit(PersonAuthentication.authenticate(credentials as never)))
          expect(error).toMatchObject({
            _tag: "InvalidRequest",
            field: "credentials",
            reason: "must be an object with passCode and dateOfBirth"
          })
        }
        const future = failureOf(yield* Effect.exit(authenticate("2026-11-26")))
        expect(future).toMatchObject({ field: "dateOfBirth", reason: "is in the future" })
        expect(yield* fake.requests).toHaveLength(0)
      })
    ))

  it.effect("an answer that is not a JSON object, or holds a null PersonUid, says so; the date of birth echoed as .NET prints it is scrubbed", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        yield* fake.scriptData(
          answer([{ PersonUid: PERSON_UID }]),
          answer({ PersonUid: null, Success: true }),
          answer({ Message: "no person for 3/4/1945 and 3/4/1945 12:00:00 AM" }, 400)
        )
        const notObject = yield* Effect.flip(authenticate("1945-03-04"))
        expect(notObject).toMatchObject({ _tag: "ResponseDecodeError", method: "POST" })
        expect(notObject.message).toContain("the body is not a JSON object")
        const nullUid = yield* Effect.flip(authenticate("1945-03-04"))
        expect(nullUid.message).toContain("the body has no PersonUid")
        const echoed = yield* Effect.flip(authenticate("1945-03-04"))
        expect(echoed._tag).toBe("BadRequest")
        expect(JSON.stringify(echoed)).not.toContain("3/4/1945")
        expect(echoed.message).not.toContain("3/4/1945")
      })
    ))

  it.effect("the call's span is PersonAuthentication.authenticate, labelled with its operation", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        const { spans, tracer } = yield* CapturingTracer.make
        yield* fake.scriptData(answer({ PersonUid: PERSON_UID }))
        yield* authenticate().pipe(Effect.withTracer(tracer))
        const span = spans.find((span) => span.name === "PersonAuthentication.authenticate")
        expect(span?.attributes.get("clinical.operation")).toBe("authenticate")
      })
    ))
})
