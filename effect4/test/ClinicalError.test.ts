/**
 * The Effect 4 line's failures: the core's messages, nothing but their fields in JSON, told apart by
 * the Schema guards, failed and caught by tag in Effect 4's own way.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as Core from "../../core/errors.js"
import * as ClinicalError from "../src/ClinicalError.js"
import { fromCore } from "../src/internal/fromCore.js"

describe("ClinicalError (Effect 4)", () => {
  it("each message is the core's, and says what failed without any field's raw dump", () => {
    const error = new ClinicalError.RateLimited({
      operation: "medications",
      method: "POST",
      url: "https://api.example/Medications",
      status: 429,
      retryAfterMillis: 2000
    })
    assert.strictEqual(
      error.message,
      "medications request POST https://api.example/Medications (HTTP 429) was rate limited; retry after 2000 ms"
    )
    assert.strictEqual(error.message, Core.messageOf(error))
  })

  it("JSON holds the fields and the tag, nothing else", () => {
    const error = new ClinicalError.InvalidRequest({ operation: "medications", field: "personUid", reason: "is empty" })
    assert.deepStrictEqual(JSON.parse(JSON.stringify(error)), {
      _tag: "InvalidRequest",
      operation: "medications",
      field: "personUid",
      reason: "is empty"
    })
  })

  it("the guards tell a request's failure from a setting's and from anything else", () => {
    const refused = new ClinicalError.InvalidConfig({ setting: "baseUrl", reason: "must be https" })
    const down = new ClinicalError.CircuitOpen({ operation: "token", retryAfterMillis: 10 })
    assert.isTrue(ClinicalError.isRequestError(down))
    assert.isFalse(ClinicalError.isRequestError(refused))
    assert.isTrue(ClinicalError.isClinicalError(refused))
    assert.isFalse(ClinicalError.isClinicalError(new Error("boom")))
    assert.isFalse(ClinicalError.isClinicalError({ _tag: "CircuitOpen" }))
  })

  it("the transport's reasons are the core's, and a reason outside them is refused by the Schema", () => {
    assert.deepStrictEqual(ClinicalError.TransportFailure.literals, Core.TRANSPORT_FAILURES)
    assert.isFalse(Schema.is(ClinicalError.TransportFailure)("Teleport"))
  })

  it.effect("fails and is caught by its tag", () =>
    Effect.gen(function*() {
      const caught = yield* Effect.fail(new ClinicalError.ServerError({ operation: "token", status: 503 })).pipe(
        Effect.catchTag("ServerError", (error) => Effect.succeed(error.status))
      )
      assert.strictEqual(caught, 503)
    }))
})

describe("a failure the core decided on", () => {
  it("becomes this line's class of its tag, with its fields, message and guards", () => {
    const error = fromCore({
      _tag: "UnexpectedStatus",
      operation: "medications",
      method: "POST",
      url: "https://api.example/x",
      status: 302,
      location: "https://elsewhere.example"
    })
    assert.instanceOf(error, ClinicalError.UnexpectedStatus)
    assert.strictEqual(error.location, "https://elsewhere.example")
    assert.strictEqual(error.message, Core.messageOf(error))
    assert.isTrue(ClinicalError.isRequestError(error))
    const refused = fromCore({ _tag: "InvalidConfig", setting: "ca", reason: "is empty" })
    assert.instanceOf(refused, ClinicalError.InvalidConfig)
    assert.isFalse(ClinicalError.isRequestError(refused))
  })
})
