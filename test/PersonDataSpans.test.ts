/**
 * A person-data call's span, each way a fiber can be traced (issue 24's mutation run): refused
 * before sending, tracing off, ids that are not W3C ids, a span that is not propagated.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Tracer } from "effect"
import { PersonData } from "effect-clinical"
import * as CapturingTracer from "./support/CapturingTracer.js"
import * as Fake from "./support/FakeService.js"

describe("a call's span, each way a fiber can be traced (issue 24's mutation run)", () => {
  it.effect("a PersonUid refused before anything is sent still ends the call's span, as a failure", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        const { spans, tracer } = yield* CapturingTracer.make
        const error = yield* Effect.flip(PersonData.get(PersonData.medications, "").pipe(Effect.withTracer(tracer)))
        expect(error).toMatchObject({ _tag: "InvalidRequest", field: "personUid" })
        const call = spans.find((span) => span.name === "PersonData.medications")!
        expect(call.status._tag === "Ended" && call.status.exit._tag).toBe("Failure")
        expect(yield* fake.requests).toHaveLength(0)
      })
    ))

  it.effect("tracing turned off: no span is made, the call is made, and no traceparent is sent (there are no ids to pass)", () =>
    Effect.gen(function*() {
      const { spans, tracer } = yield* CapturingTracer.make
      const fake = yield* Fake.make()
      const result = yield* PersonData.get(PersonData.medications, Fake.PERSON_UID).pipe(
        Effect.provide(Fake.clientLayer(fake, { tracePropagation: true })),
        Effect.withTracerEnabled(false),
        Effect.withTracer(tracer)
      )
      expect(result.items).toHaveLength(Fake.MEDICATIONS.length)
      expect(spans).toEqual([])
      // Effect's no-op span has no W3C ids ("noop"): a header made of it would be malformed.
      expect((yield* fake.requests).map((request) => request.headers["traceparent"])).toEqual([undefined, undefined])
    }))

  it.effect("a tracer whose ids are not W3C ids (all zeros, as OpenTelemetry's without an SDK; not hex): no traceparent", () =>
    Effect.gen(function*() {
      const { tracer } = yield* CapturingTracer.make
      for (
        const [traceId, spanId] of [["0".repeat(32), "0".repeat(16)], ["x".repeat(32), "1".repeat(16)], [
          "a".repeat(32),
          "b".repeat(15)
        ]]
      ) {
        const odd = Tracer.make({
          span: (...args) => Object.assign(tracer.span(...args), { traceId, spanId }),
          context: tracer.context
        })
        const fake = yield* Fake.make()
        yield* PersonData.get(PersonData.medications, Fake.PERSON_UID).pipe(
          Effect.provide(Fake.clientLayer(fake, { tracePropagation: true })),
          Effect.withTracer(odd)
        )
        const sent = (yield* fake.requests).map((request) => request.headers["traceparent"])
        expect(sent, traceId).toEqual([undefined, undefined])
      }
    }))

  it.effect("under a span that is not propagated (Effect's DisablePropagation): the call's spans start a trace of their own", () =>
    Effect.gen(function*() {
      const { spans, tracer } = yield* CapturingTracer.make
      const fake = yield* Fake.make()
      yield* PersonData.get(PersonData.medications, Fake.PERSON_UID).pipe(
        Effect.provide(Fake.clientLayer(fake, { tracePropagation: true })),
        Effect.withSpan("quiet", { context: Context.make(Tracer.DisablePropagation, true) }),
        Effect.withTracer(tracer)
      )
      // As Effect.withSpan makes them: the quiet span is no parent; the call's span is a root,
      // with its attributes and no stack trace; the attempts are its children, and their ids go out.
      const call = spans.find((span) => span.name === "PersonData.medications")!
      expect(call.parent._tag).toBe("None")
      expect(Object.fromEntries(call.attributes)).toEqual({
        "clinical.operation": "medications",
        "clinical.attempts": 1,
        "http.response.status_code": 200
      })
      const attempts = spans.filter((span) => span.kind === "client")
      expect(attempts).toHaveLength(2)
      const data = attempts.find((span) =>
        span.attributes.get("url.full") === `${Fake.BASE_URL}/api/clinical/medication/get`
      )!
      expect(data.parent).toMatchObject({ _tag: "Some", value: { spanId: call.spanId } })
      expect((yield* fake.requests).map((request) => request.headers["traceparent"])).toEqual(
        attempts.map((span) => `00-${span.traceId}-${span.spanId}-01`)
      )
    }))

  it.effect("getAs refuses a schema that is not one, naming why", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(
          PersonData.getAs(PersonData.medications, "not a schema" as never, Fake.PERSON_UID)
        )
        expect(error).toMatchObject({ _tag: "InvalidRequest", field: "schema", reason: "must be a Schema" })
        expect(yield* fake.requests).toHaveLength(0)
      })
    ))
})
