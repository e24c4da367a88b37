/**
 * The Effect 4 call's common path (a fresh token, a free turn, the request dispatched and read in
 * the transport's callbacks) over loopback: taken when no one could see the call's spans, left for
 * the Effect path when a tracer is installed; its metrics (with the application's attributes), its
 * way on to the Effect path on an answer that does not read, and a call interrupted mid-request
 * (the request aborted, the turn given back). The specifications (spec/hostile.ts, spec/endToEnd.ts)
 * run every flow on this path too (`effect4/test/support/line.ts` names it).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, ManagedRuntime, Metric } from "effect"
import { afterAll, beforeAll } from "vitest"
import * as ClinicalClient from "../src/ClinicalClient.js"
import * as HttpTransport from "../src/HttpTransport.js"
import * as Telemetry from "../src/internal/observability/telemetry.js"
import * as MedicationService from "../src/MedicationService.js"
import * as MockClinicalServer from "../src/testing/MockClinicalServer.js"
import { capturingTracer } from "./support/line.js"

let mock: MockClinicalServer.Started
beforeAll(async () => {
  mock = await MockClinicalServer.start()
})
afterAll(async () => {
  await mock?.close()
})

const { Fault } = MockClinicalServer

/** A client over the undici transport whose `dispatch` calls are counted, and the most out at once. */
const client = (options: Partial<Parameters<typeof ClinicalClient.layer>[0]> = {}) => {
  const counts = { dispatched: 0, out: 0, mostOut: 0 }
  const transport = Layer.effect(
    HttpTransport.HttpTransport,
    HttpTransport.HttpTransport.useSync((inner): HttpTransport.Service => ({
      send: inner.send,
      dispatch: (request, done) => {
        counts.dispatched++
        counts.mostOut = Math.max(counts.mostOut, ++counts.out)
        const cancel = inner.dispatch!(request, (outcome) => {
          counts.out--
          done(outcome)
        })
        return () => {
          counts.out--
          cancel()
        }
      }
    }))
  ).pipe(Layer.provide(HttpTransport.layerUndici()))
  const runtime = ManagedRuntime.make(
    ClinicalClient.layer({ baseUrl: mock.url, applicationId: mock.applicationId, ...options }).pipe(
      Layer.provide(transport)
    )
  )
  return { counts, runtime }
}

const person = () => mock.persons[0]!.personUid

describe("the call's common path (Effect 4)", () => {
  it("is taken once a token is cached and no tracer is installed; a traced call takes the Effect path, its spans made", async () => {
    const { counts, runtime } = client()
    try {
      await runtime.runPromise(MedicationService.get(person()))
      const cold = counts.dispatched
      // The first call found no token: it went on the Effect path.
      assert.strictEqual(cold, 0)
      await runtime.runPromise(MedicationService.get(person()))
      assert.strictEqual(counts.dispatched, 1)
      const { spans, tracer } = capturingTracer()
      await runtime.runPromise(Effect.withTracer(MedicationService.get(person()), tracer))
      assert.strictEqual(counts.dispatched, 1)
      assert.deepStrictEqual(spans.map((span) => span.name).sort(), ["POST", "PersonData.medications"])
    } finally {
      await runtime.dispose()
    }
  })

  // Found by review: `{ ...undici, send }`, the usual way to wrap a transport, kept undici's
  // `dispatch`, and every call with a cached token went round the application's send.
  it("a transport whose send the application replaced ({ ...undici, send: wrapped }): every call goes through that send", async () => {
    const sent: Array<string> = []
    const transport = Layer.effect(
      HttpTransport.HttpTransport,
      HttpTransport.HttpTransport.useSync((inner): HttpTransport.Service => ({
        ...inner,
        send: (request) => {
          sent.push(request.url)
          return inner.send(request)
        }
      }))
    ).pipe(Layer.provide(HttpTransport.layerUndici()))
    const runtime = ManagedRuntime.make(
      ClinicalClient.layer({ baseUrl: mock.url, applicationId: mock.applicationId }).pipe(Layer.provide(transport))
    )
    try {
      for (let i = 0; i < 3; i++) await runtime.runPromise(MedicationService.get(person()))
      // The token request, and the three data requests.
      assert.strictEqual(sent.length, 4)
      assert.strictEqual(sent.filter((url) => url.endsWith(MedicationService.path)).length, 3)
    } finally {
      await runtime.dispose()
    }
  })

  it("records the attempts and the request's duration, with the application's metric attributes", async () => {
    const { port } = new URL(mock.url)
    const { counts, runtime } = client()
    try {
      await runtime.runPromise(MedicationService.get(person()))
      const attributes = { tenant: "common" }
      await runtime.runPromise(
        Effect.provideService(
          Effect.andThen(MedicationService.get(person()), MedicationService.get(person())),
          Metric.CurrentMetricAttributes,
          attributes
        )
      )
      assert.strictEqual(counts.dispatched, 2)
      const attempts = Metric.withAttributes(Telemetry.attemptsPerCall, { operation: "medications", ...attributes })
      const duration = Metric.withAttributes(Telemetry.httpClientRequestDuration, {
        "http.request.method": "POST",
        "server.address": "127.0.0.1",
        "server.port": port,
        "http.response.status_code": "200",
        ...attributes
      })
      const read = <I, S>(metric: Metric.Metric<I, S>) =>
        runtime.runPromise(Effect.provideService(Metric.value(metric), Metric.CurrentMetricAttributes, attributes))
      assert.strictEqual((await read(attempts) as { count: number }).count, 2)
      assert.strictEqual((await read(duration) as { count: number }).count, 2)
    } finally {
      await runtime.dispose()
    }
  })

  it("an answer that does not read goes on on the Effect path: a 503 is retried, the call succeeds", async () => {
    const { counts, runtime } = client({ retryBaseDelay: "10 millis", retryMaxDelay: "20 millis" })
    try {
      await runtime.runPromise(MedicationService.get(person()))
      const before = await mock.counters()
      await mock.injectFaults("medications", [Fault.status(503)])
      const result = await runtime.runPromise(MedicationService.get(person()))
      assert.isAbove(result.medications.length, 0)
      // The first attempt on the common path, the retry on the Effect path (no dispatch there).
      assert.strictEqual(counts.dispatched, 1)
      assert.strictEqual((await mock.counters()).medicationRequests - before.medicationRequests, 2)
    } finally {
      await mock.clearFaults()
      await runtime.dispose()
    }
  })

  it("interrupted mid-request: the request is aborted before the one turn goes to the call waiting for it", async () => {
    const { counts, runtime } = client({ maxConcurrentRequests: 1, adaptiveConcurrency: false })
    try {
      await runtime.runPromise(MedicationService.get(person()))
      await mock.injectFaults("medications", [Fault.delay("5 seconds")])
      const started = Date.now()
      const [interrupted, waited] = await runtime.runPromise(
        Effect.gen(function*() {
          const fiber = yield* Effect.forkChild(MedicationService.get(person()))
          yield* Effect.sleep("100 millis")
          // A second call waits for the one turn.
          const waiting = yield* Effect.forkChild(MedicationService.get(person()))
          yield* Effect.sleep("50 millis")
          yield* Fiber.interrupt(fiber)
          return [yield* Fiber.await(fiber), yield* Fiber.await(waiting)] as const
        })
      )
      assert.isTrue(Exit.hasInterrupts(interrupted))
      assert.isTrue(Exit.isSuccess(waited))
      // Not held up by the delayed request: its turn came back when it was aborted.
      assert.isBelow(Date.now() - started, 4000)
      assert.strictEqual(counts.dispatched, 2)
      // Found by review: the turn went on before the request was aborted, two out with a bound of one.
      assert.strictEqual(counts.mostOut, 1)
    } finally {
      await mock.clearFaults()
      await runtime.dispose()
    }
  })
})
