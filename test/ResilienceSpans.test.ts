/**
 * The spans and metrics of a call and its attempts, as OpenTelemetry's HTTP client conventions name
 * them, and the traceparent sent when tracePropagation asks for it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Metric, MetricLabel, Tracer } from "effect"
import { HttpTransport, MedicationService } from "effect-clinical"
import * as Telemetry from "../src/internal/observability/telemetry.js"
import * as CapturingTracer from "./support/CapturingTracer.js"
import * as Fake from "./support/FakeService.js"
import { get, withClient } from "./support/resilienceFixtures.js"

describe("spans", () => {
  it.effect("PersonData.medications (the span of MedicationService.get) and TokenService.refresh carry attempts, status and reason", () =>
    withClient((fake) =>
      Effect.gen(function*() {
        const { spans, tracer } = yield* CapturingTracer.make
        yield* fake.scriptData(Fake.respond(503, {}))
        yield* Fake.runWithClock(get).pipe(Effect.withTracer(tracer))
        const byName = (name: string) => spans.find((span) => span.name === name)!
        expect(byName("PersonData.medications").kind).toBe("internal")
        expect(Object.fromEntries(byName("PersonData.medications").attributes)).toMatchObject({
          "clinical.operation": "medications",
          "clinical.attempts": 2,
          "http.response.status_code": 200
        })
        expect(Object.fromEntries(byName("TokenService.refresh").attributes)).toMatchObject({
          "clinical.refresh.reason": "empty",
          "clinical.token.generation": 1,
          "clinical.server_clock_skew_ms": 0,
          "clinical.token.source": "server",
          "http.response.status_code": 200
        })
      })
    ))

  it.effect("one CLIENT span per HTTP attempt, as OpenTelemetry's HTTP client conventions name it", () =>
    withClient((fake) =>
      Effect.gen(function*() {
        const { spans, tracer } = yield* CapturingTracer.make
        yield* fake.scriptData(Fake.respond(503, {}))
        yield* Fake.runWithClock(get).pipe(Effect.withTracer(tracer))
        const call = spans.find((span) => span.name === "PersonData.medications")!
        const refresh = spans.find((span) => span.name === "TokenService.refresh")!
        const attempts = spans.filter((span) => span.kind === "client")
        expect(attempts.map((span) => span.name)).toEqual(["POST", "POST", "POST"])
        const [token, first, second] = attempts.map((span) => ({
          parent: span.parent._tag === "Some" ? span.parent.value : undefined,
          attributes: Object.fromEntries(span.attributes),
          ended: span.status._tag === "Ended"
        }))
        expect(token).toEqual({
          parent: refresh,
          attributes: {
            "http.request.method": "POST",
            "server.address": "openapiauthtest.intelichart.com",
            "server.port": 443,
            "url.full": `${Fake.AUTH_URL}${Fake.TOKEN_PATH}`,
            "http.response.status_code": 200
          },
          ended: true
        })
        const data = {
          "http.request.method": "POST",
          "server.address": "openapitest.intelichart.com",
          "server.port": 443,
          "url.full": `${Fake.BASE_URL}${Fake.MEDICATION_PATH}`
        }
        expect(first).toEqual({
          parent: call,
          attributes: { ...data, "http.response.status_code": 503, "error.type": "503" },
          ended: true
        })
        expect(second).toEqual({
          parent: call,
          attributes: { ...data, "http.request.resend_count": 1, "http.response.status_code": 200 },
          ended: true
        })
      })
    ))

  it.effect("a transport failure's attempt span says why, and the duration histogram counts every attempt", () =>
    withClient((fake) =>
      Effect.gen(function*() {
        const { spans, tracer } = yield* CapturingTracer.make
        const duration = (status: number | undefined, error: string | undefined) =>
          Metric.taggedWithLabels(Telemetry.httpClientRequestDuration, [
            MetricLabel.make("http.request.method", "POST"),
            MetricLabel.make("server.address", "openapitest.intelichart.com"),
            MetricLabel.make("server.port", "443"),
            ...(status === undefined ? [] : [MetricLabel.make("http.response.status_code", String(status))]),
            ...(error === undefined ? [] : [MetricLabel.make("error.type", error)])
          ])
        const before = (yield* Metric.value(duration(undefined, "Network"))).count
        const okBefore = (yield* Metric.value(duration(200, undefined))).count
        yield* fake.scriptData((request) => Effect.fail(HttpTransport.transportError(request, "Network", "ECONNRESET")))
        yield* Fake.runWithClock(get).pipe(Effect.withTracer(tracer))
        const failed = spans.find((span) => span.kind === "client" && span.attributes.get("error.type") === "Network")!
        expect(failed.attributes.get("http.response.status_code")).toBeUndefined()
        expect((yield* Metric.value(duration(undefined, "Network"))).count - before).toBe(1)
        expect((yield* Metric.value(duration(200, undefined))).count - okBefore).toBe(1)
      })
    ))

  it.effect("with no tracer installed a call makes no span (nothing could see one), and still records its metrics", () =>
    withClient((fake) =>
      Effect.gen(function*() {
        // What a transport sees as the current span: the call's, when spans are made.
        const seen: Array<string> = []
        const answer = HttpTransport.jsonResponse(200, { Medications: [], Success: true })
        const looking: Fake.Responder = () =>
          Effect.map(Effect.option(Effect.currentSpan), (span) => {
            seen.push(span._tag === "Some" ? `${span.value.name} under ${span.value.parent._tag}` : "none")
            return answer
          })
        const duration = Metric.taggedWithLabels(Telemetry.httpClientRequestDuration, [
          MetricLabel.make("http.request.method", "POST"),
          MetricLabel.make("server.address", "openapitest.intelichart.com"),
          MetricLabel.make("server.port", "443"),
          MetricLabel.make("http.response.status_code", "200")
        ])
        const before = (yield* Metric.value(duration)).count
        yield* fake.scriptData(looking, looking)
        // Effect's default tracer: spans made there go nowhere, so the call makes none.
        yield* Fake.runWithClock(get)
        const { spans, tracer } = yield* CapturingTracer.make
        yield* Fake.runWithClock(get).pipe(Effect.withTracer(tracer))
        expect(seen).toEqual(["none", "PersonData.medications under None"])
        expect(spans.filter((span) => span.kind === "client").map((span) => span.name)).toEqual(["POST"])
        expect((yield* Metric.value(duration)).count - before).toBe(2)
      })
    ))

  it.effect("an attempt answered 400 ends its span failed, with error.type 400; a 200 ends it OK (issue 24's audit)", () =>
    withClient((fake) =>
      Effect.gen(function*() {
        const { spans, tracer } = yield* CapturingTracer.make
        yield* fake.scriptData(Fake.respond(400, { Success: false, ErrorType: "Bad", ErrorMessage: "no" }))
        yield* Effect.exit(Fake.runWithClock(get).pipe(Effect.withTracer(tracer)))
        yield* Fake.runWithClock(get).pipe(Effect.withTracer(tracer))
        const attempts = spans.filter((span) =>
          span.kind === "client" && span.attributes.get("server.address") ===
            "openapitest.intelichart.com"
        )
        const outcome = (span: Tracer.Span) =>
          span.status._tag === "Ended" ? (Exit.isSuccess(span.status.exit) ? "ok" : "failed") : "running"
        expect(attempts.map((span) => [span.attributes.get("error.type"), outcome(span)])).toEqual([
          ["400", "failed"],
          [undefined, "ok"]
        ])
      })
    ))

  it.effect("the duration histogram records seconds, as the conventions name it (issue 24's audit)", () =>
    withClient((fake) =>
      Effect.gen(function*() {
        const duration = Metric.taggedWithLabels(Telemetry.httpClientRequestDuration, [
          MetricLabel.make("http.request.method", "POST"),
          MetricLabel.make("server.address", "openapitest.intelichart.com"),
          MetricLabel.make("server.port", "443"),
          MetricLabel.make("http.response.status_code", "200")
        ])
        const before = yield* Metric.value(duration)
        // An answer 60 ms in coming, on the real clock.
        yield* fake.scriptData(() =>
          Effect.zipRight(
            Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 60))),
            Effect.succeed(HttpTransport.jsonResponse(200, { Medications: [], Success: true }))
          )
        )
        yield* Fake.runWithClock(get)
        const after = yield* Metric.value(duration)
        expect(after.count - before.count).toBe(1)
        // At least 0.06 s; in milliseconds it would be 60 or more.
        expect(after.sum - before.sum).toBeGreaterThanOrEqual(0.055)
        expect(after.sum - before.sum).toBeLessThan(30)
      })
    ))

  it.effect("traceparent carries the span's sampled flag: 00 for a span not sampled (issue 24's audit)", () =>
    Effect.gen(function*() {
      const { tracer } = yield* CapturingTracer.make
      const unsampled = Tracer.make({
        span: (...args) => Object.defineProperty(tracer.span(...args), "sampled", { value: false }),
        context: tracer.context
      })
      const fake = yield* Fake.make()
      yield* MedicationService.get(Fake.PERSON_UID).pipe(
        Effect.provide(Fake.clientLayer(fake, { tracePropagation: true })),
        Effect.withTracer(unsampled)
      )
      const sent = (yield* fake.requests).map((request) => request.headers["traceparent"])
      expect(sent).toHaveLength(2)
      for (const header of sent) expect(header).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/)
    }))

  it.effect("with no tracer installed, tracePropagation still sends a traceparent of its own ids", () =>
    Effect.gen(function*() {
      const fake = yield* Fake.make()
      yield* MedicationService.get(Fake.PERSON_UID).pipe(
        Effect.provide(Fake.clientLayer(fake, { tracePropagation: true }))
      )
      const sent = (yield* fake.requests).map((request) => request.headers["traceparent"])
      expect(sent).toHaveLength(2)
      for (const header of sent) expect(header).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/)
    }))

  it.effect("no traceparent is sent unless tracePropagation asks for it; then it is the attempt span's", () =>
    Effect.gen(function*() {
      const { spans, tracer } = yield* CapturingTracer.make
      for (const tracePropagation of [false, true]) {
        const fake = yield* Fake.make()
        yield* MedicationService.get(Fake.PERSON_UID).pipe(
          Effect.provide(Fake.clientLayer(fake, { tracePropagation })),
          Effect.withTracer(tracer)
        )
        const sent = (yield* fake.requests).map((request) => request.headers["traceparent"])
        if (!tracePropagation) {
          expect(sent).toEqual([undefined, undefined])
          continue
        }
        const attempts = spans.filter((span) => span.kind === "client").slice(-2)
        expect(sent).toEqual(attempts.map((span) => `00-${span.traceId}-${span.spanId}-01`))
      }
    }))
})
