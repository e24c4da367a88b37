/**
 * The Effect 4 line's calls over the in-memory transport: what goes over the wire for a person's
 * medications and for authenticate, what comes back, how many requests were made, and which typed
 * error each failure is (the rules are the core's; these check that this line interprets them).
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Layer, Redacted, Schema } from "effect"
import * as HttpDate from "../../core/httpDate.js"
import * as ClinicalClient from "../src/ClinicalClient.js"
import type * as ClinicalConfig from "../src/ClinicalConfig.js"
import type { InvalidConfig } from "../src/ClinicalError.js"
import * as HttpTransport from "../src/HttpTransport.js"
import * as MedicationService from "../src/MedicationService.js"
import * as PersonAuthentication from "../src/PersonAuthentication.js"
import * as PersonData from "../src/PersonData.js"

const APPLICATION_ID = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"
const PERSON_UID = "9c1d7e6a-51b2-4c3f-8e0d-1a2b3c4d5e6f"
const HOUR = 3_600_000

interface Seen {
  readonly url: string
  readonly method: string
  readonly headers: Record<string, string>
  readonly body: string | undefined
}

/**
 * The service in memory: the token endpoint issues `tok-1`, `tok-2`, ...; every other request is
 * answered by `answer` (n: the data request's number, from 1). Every request is kept as sent.
 */
const service = (answer: (request: Seen, n: number) => HttpTransport.TransportResponse) => {
  const tokens: Array<Seen> = []
  const data: Array<Seen> = []
  const layer = HttpTransport.layerMemory((request) =>
    Effect.map(Clock.currentTimeMillis, (now) => {
      const seen: Seen = {
        url: request.url,
        method: request.method,
        headers: HttpTransport.wireHeaders(request),
        body: HttpTransport.wireBody(request)
      }
      if (request.url.endsWith("/api/Server/Token")) {
        tokens.push(seen)
        return HttpTransport.jsonResponse(200, { Token: `tok-${tokens.length}`, TokenType: "Bearer" }, {
          Date: HttpDate.format(now),
          TOKEN_EXPIRES: HttpDate.format(now + HOUR)
        })
      }
      data.push(seen)
      return answer(seen, data.length)
    })
  )
  return { tokens, data, layer }
}

const client = (
  transport: Layer.Layer<HttpTransport.HttpTransport, InvalidConfig>,
  options: Partial<ClinicalConfig.Options> = {}
) =>
  ClinicalClient.layer({
    baseUrl: "https://api.example",
    applicationId: APPLICATION_ID,
    retryBaseDelay: "5 millis",
    retryMaxDelay: "20 millis",
    ...options
  }).pipe(Layer.provide(transport))

const envelope = (fields: object) => ({ Success: true, ...fields })

describe("calls (Effect 4)", () => {
  it.live("medications: one POST with the token, the ApplicationId and the PersonUid in the body; the items and the whole answer back", () =>
    Effect.gen(function*() {
      const { data, layer, tokens } = service(() =>
        HttpTransport.jsonResponse(200, envelope({ Medications: [{ Name: "Aspirin" }, { Name: "Metformin" }] }))
      )
      const result = yield* MedicationService.get(Redacted.make(PERSON_UID)).pipe(Effect.provide(client(layer)))
      assert.strictEqual(tokens.length, 1)
      assert.strictEqual(data.length, 1)
      const sent = data[0]!
      assert.strictEqual(sent.method, "POST")
      assert.strictEqual(sent.url, "https://api.example/api/clinical/medication/get")
      assert.strictEqual(sent.headers.Authorization, "Bearer tok-1")
      assert.strictEqual(sent.headers.ApplicationId, APPLICATION_ID)
      assert.strictEqual(sent.headers["Content-Type"], "application/json")
      assert.strictEqual(sent.headers["Accept-Encoding"], "identity")
      assert.strictEqual(sent.body, `{"personuid":"${PERSON_UID}"}`)
      assert.deepStrictEqual(result.medications, [{ Name: "Aspirin" }, { Name: "Metformin" }])
      assert.deepStrictEqual(result.raw, envelope({ Medications: [{ Name: "Aspirin" }, { Name: "Metformin" }] }))
    }))

  it.live("a date range goes in the body as YYYY-MM-DD; a range backwards is refused before anything is sent", () =>
    Effect.gen(function*() {
      const { data, layer } = service(() => HttpTransport.jsonResponse(200, envelope({ Medications: [] })))
      yield* Effect.gen(function*() {
        yield* MedicationService.get(PERSON_UID, { startDate: new Date(Date.UTC(2024, 0, 31)), endDate: "2024-02-29" })
        assert.strictEqual(
          data[0]!.body,
          `{"personuid":"${PERSON_UID}","StartDate":"2024-01-31","EndDate":"2024-02-29"}`
        )
        const refused = yield* Effect.flip(
          MedicationService.get(PERSON_UID, { startDate: "2024-03-01", endDate: "2024-02-01" })
        )
        assert.strictEqual(refused._tag, "InvalidRequest")
        assert.deepInclude(refused, { operation: "medications", field: "startDate", reason: "is after endDate" })
        const badUid = yield* Effect.flip(MedicationService.get("not visible\u0001"))
        assert.deepInclude(badUid, { _tag: "InvalidRequest", field: "personUid" })
      }).pipe(Effect.provide(client(layer)))
      assert.strictEqual(data.length, 1)
    }))

  it.live("a 401 drops the token, takes a fresh one and sends again once; a second 401 is the caller's Unauthorized", () =>
    Effect.gen(function*() {
      const once = service((_, n) =>
        n === 1 ? HttpTransport.jsonResponse(401, {}) : HttpTransport.jsonResponse(200, envelope({ Medications: [] }))
      )
      yield* MedicationService.get(PERSON_UID).pipe(Effect.provide(client(once.layer)))
      assert.strictEqual(once.tokens.length, 2)
      assert.deepStrictEqual(once.data.map((seen) => seen.headers.Authorization), ["Bearer tok-1", "Bearer tok-2"])

      const always = service(() => HttpTransport.jsonResponse(401, {}))
      const error = yield* Effect.flip(MedicationService.get(PERSON_UID).pipe(Effect.provide(client(always.layer))))
      assert.strictEqual(error._tag, "Unauthorized")
      assert.strictEqual(always.data.length, 2)
    }))

  it.live("503 is retried up to maxRetries, then the call fails ServerError; a 400 is not retried", () =>
    Effect.gen(function*() {
      const down = service(() => HttpTransport.jsonResponse(503, {}))
      const error = yield* Effect.flip(
        MedicationService.get(PERSON_UID).pipe(Effect.provide(client(down.layer, { maxRetries: 2 })))
      )
      assert.strictEqual(error._tag, "ServerError")
      assert.strictEqual(down.data.length, 3)

      const refused = service(() => HttpTransport.jsonResponse(400, { Message: "bad" }))
      const bad = yield* Effect.flip(MedicationService.get(PERSON_UID).pipe(Effect.provide(client(refused.layer))))
      assert.strictEqual(bad._tag, "BadRequest")
      assert.strictEqual(refused.data.length, 1)
    }))

  it.live("a service that keeps failing opens the circuit: calls fail CircuitOpen with nothing sent", () =>
    Effect.gen(function*() {
      const down = service(() => HttpTransport.jsonResponse(500, {}))
      yield* Effect.gen(function*() {
        for (let i = 0; i < 3; i++) yield* Effect.flip(MedicationService.get(PERSON_UID))
        const sent = down.data.length
        const error = yield* Effect.flip(MedicationService.get(PERSON_UID))
        assert.strictEqual(error._tag, "CircuitOpen")
        assert.strictEqual(down.data.length, sent)
      }).pipe(
        Effect.provide(
          client(down.layer, {
            maxRetries: 0,
            circuitBreakerThreshold: 3,
            circuitBreakerCooldown: "1 minute",
            circuitBreakerMaxCooldown: "1 minute"
          })
        )
      )
    }))

  it.live("an answer without the collection is a ResponseDecodeError that names what is missing, never the PersonUid echoed", () =>
    Effect.gen(function*() {
      const { layer } = service(() => HttpTransport.jsonResponse(200, envelope({ Echo: PERSON_UID })))
      const error = yield* Effect.flip(MedicationService.get(PERSON_UID).pipe(Effect.provide(client(layer))))
      assert.strictEqual(error._tag, "ResponseDecodeError")
      assert.include(error.message, "the body has no Medications collection")
      assert.notInclude(JSON.stringify(error), PERSON_UID)
    }))

  it.live("getAs decodes each item with the caller's Schema; a failure names the path and kind, never the value", () =>
    Effect.gen(function*() {
      const { layer } = service(() =>
        HttpTransport.jsonResponse(
          200,
          envelope({ Ethnicities: [{ Name: "A", Code: "1" }, { Name: "SECRET-VALUE", Code: 7 }] })
        )
      )
      const error = yield* Effect.flip(
        PersonData.getAs(PersonData.ethnicities, PersonData.Ethnicity, PERSON_UID).pipe(Effect.provide(client(layer)))
      )
      assert.strictEqual(error._tag, "ResponseDecodeError")
      assert.include(error.message, "Ethnicities[1].Code has the wrong type")
      assert.notInclude(error.message, "SECRET-VALUE")

      const fine = service(() =>
        HttpTransport.jsonResponse(200, envelope({ Ethnicities: [{ Name: "A", Code: "1", Extra: 1 }] }))
      )
      const result = yield* PersonData.getAs(PersonData.ethnicities, Schema.Struct({ Name: Schema.String }), PERSON_UID)
        .pipe(
          Effect.provide(client(fine.layer))
        )
      assert.deepStrictEqual(result.items, [{ Name: "A" }])
    }))

  it.live("authenticate: the ApplicationId, pass code and date of birth in the body; the PersonUid back Redacted", () =>
    Effect.gen(function*() {
      const { data, layer } = service(() => HttpTransport.jsonResponse(200, envelope({ personUID: PERSON_UID })))
      const uid = yield* PersonAuthentication.authenticate({
        passCode: Redacted.make("PASS-1234"),
        dateOfBirth: "1945-01-01"
      }).pipe(Effect.provide(client(layer)))
      assert.strictEqual(Redacted.value(uid), PERSON_UID)
      assert.notInclude(String(uid), PERSON_UID)
      assert.strictEqual(data[0]!.url, "https://api.example/api/Server/Authenticate")
      assert.deepStrictEqual(JSON.parse(data[0]!.body!), {
        ApplicationId: APPLICATION_ID,
        PassCode: "PASS-1234",
        DateOfBirth: "01/01/1945"
      })
    }))

  it.live("authenticate is sent once: a 503 is not resent (a pass code may be single-use), and its echo is scrubbed", () =>
    Effect.gen(function*() {
      const { data, layer } = service(() =>
        HttpTransport.jsonResponse(503, { Message: "busy for PASS-1234 born 1945-01-01" })
      )
      const error = yield* Effect.flip(
        PersonAuthentication.authenticate({ passCode: "PASS-1234", dateOfBirth: "1945-01-01" }).pipe(
          Effect.provide(client(layer))
        )
      )
      assert.strictEqual(error._tag, "ServerError")
      assert.strictEqual(data.length, 1)
      const shown = `${error.message} ${JSON.stringify(error)}`
      assert.notInclude(shown, "PASS-1234")
      assert.notInclude(shown, "1945-01-01")
    }))

  it.live("a future date of birth is refused, naming the field, before anything is sent", () =>
    Effect.gen(function*() {
      const { data, layer } = service(() => HttpTransport.jsonResponse(200, {}))
      const error = yield* Effect.flip(
        PersonAuthentication.authenticate({ passCode: "PASS-1234", dateOfBirth: "2999-01-01" }).pipe(
          Effect.provide(client(layer))
        )
      )
      assert.deepInclude(error, { _tag: "InvalidRequest", field: "dateOfBirth", reason: "is in the future" })
      assert.strictEqual(data.length, 0)
    }))
})
