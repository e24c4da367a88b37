/**
 * Many persons through one operation (`PersonData.getMany`, `MedicationService.getMany`): one
 * outcome per person, what goes over the wire, the bound on calls in flight, early stops that skip
 * the rest, progress, and the pure tally behind it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Layer, Stream } from "effect"
import { ClinicalClient, ClinicalError, HttpTransport, MedicationService, PersonData } from "effect-clinical"
import { MockClinicalServer } from "effect-clinical/testing"
import * as Tally from "../core/batchTally.js"

const persons = MockClinicalServer.fixturePersons
const known = persons.map((person) => person.personUid)

interface Settings {
  readonly applicationId?: string
  readonly maxConcurrentRequests?: number
}

/** Settings with no retries, so that each fault is one outcome. */
const settings = (options: Settings) => ({
  baseUrl: "http://127.0.0.1:9",
  applicationId: options.applicationId ?? MockClinicalServer.demoApplicationId,
  maxRetries: 0,
  maxConcurrentRequests: options.maxConcurrentRequests ?? 4
})

/** A client over a fresh in-memory mock, the mock in context for its controls. */
const client = (options: Settings = {}) =>
  ClinicalClient.layer(settings(options)).pipe(Layer.provideMerge(MockClinicalServer.layerTransport()))

const collect = <A, E, R>(stream: Stream.Stream<A, E, R>) => Effect.map(Stream.runCollect(stream), Chunk.toArray)

const byIndex = <A extends { readonly index: number }>(entries: ReadonlyArray<A>) =>
  [...entries].sort((a, b) => a.index - b.index)

describe("PersonData.getMany", () => {
  it.effect("one entry per person, each the person's own items; an unknown person fails alone", () =>
    Effect.gen(function*() {
      const input = [known[0]!, "unknown-person", known[1]!, known[2]!]
      const entries = byIndex(yield* collect(PersonData.getMany(PersonData.medications, input)))
      expect(entries.map((entry) => [entry.index, entry.outcome._tag])).toEqual([
        [0, "Success"],
        [1, "Failure"],
        [2, "Success"],
        [3, "Success"]
      ])
      for (const i of [0, 2, 3]) {
        const outcome = entries[i]!.outcome
        if (outcome._tag !== "Success") throw new Error("expected a success")
        const expected = persons[input[i] === known[0] ? 0 : input[i] === known[1] ? 1 : 2]!.medications
        expect(outcome.result.items).toEqual(expected)
      }
      const failure = entries[1]!.outcome
      expect(failure._tag === "Failure" && failure.error._tag).toBe("ApiError")
      const mock = yield* MockClinicalServer.MockClinicalServer
      const counters = yield* mock.counters
      expect(counters.tokenRequests).toBe(1)
      expect(counters.medicationRequests).toBe(4)
    }).pipe(Effect.provide(client())))

  it.effect("reads the input a few persons ahead, whatever its size, with at most `concurrency` calls in flight", () =>
    Effect.gen(function*() {
      const mock = yield* MockClinicalServer.make()
      let inFlight = 0
      let most = 0
      // The mock's answers, after a few turns of the scheduler so that calls overlap.
      const counting = HttpTransport.memory((request) =>
        Effect.acquireUseRelease(
          Effect.sync(() => most = Math.max(most, ++inFlight)),
          () => Effect.zipRight(Effect.repeatN(Effect.yieldNow(), 5), mock.handle(request)),
          () => Effect.sync(() => inFlight--)
        )
      )
      let pulled = 0
      function* generated() {
        for (let i = 0; i < 100_000; i++) {
          pulled++
          yield known[i % 3]!
        }
      }
      const first = yield* PersonData.getMany(PersonData.ethnicities, generated(), { concurrency: 3 }).pipe(
        Stream.take(30),
        collect,
        Effect.provide(
          ClinicalClient.layer(settings({ maxConcurrentRequests: 64 })).pipe(
            Layer.provide(Layer.succeed(HttpTransport.HttpTransport, counting))
          )
        )
      )
      expect(first).toHaveLength(30)
      expect(first.every((entry) => entry.outcome._tag === "Success")).toBe(true)
      expect(most).toBe(3)
      expect(pulled).toBeLessThan(200)

      const fromStream = yield* collect(PersonData.getMany(PersonData.ethnicities, Stream.fromIterable(known))).pipe(
        Effect.provide(client())
      )
      expect(byIndex(fromStream).map((entry) => entry.index)).toEqual([0, 1, 2])
    }))

  it.effect("an input Stream that fails fails the batch with its own error, after the persons before it", () =>
    Effect.gen(function*() {
      const input = Stream.concat(Stream.fromIterable(known), Stream.fail("the persons file went away" as const))
      const seen: Array<number> = []
      const error = yield* PersonData.getMany(PersonData.medications, input).pipe(
        Stream.runForEach((entry) => Effect.sync(() => seen.push(entry.index))),
        Effect.flip
      )
      expect(error).toBe("the persons file went away")
      expect(seen.length).toBeLessThanOrEqual(3)
    }).pipe(Effect.provide(client())))

  it.effect("refused batch options fail the stream before anything is sent", () =>
    Effect.gen(function*() {
      const mock = yield* MockClinicalServer.MockClinicalServer
      for (
        const [options, field] of [
          [{ concurrency: 0 }, "concurrency"],
          [{ concurrency: 1.5 }, "concurrency"],
          [{ stopAfterTransportFailures: 0 }, "stopAfterTransportFailures"],
          // As for one call: options that are not an object are refused, not taken for none.
          [5 as unknown as PersonData.ManyOptions, "options"],
          ["all" as unknown as PersonData.ManyOptions, "options"]
        ] as const
      ) {
        const error = yield* Effect.flip(collect(PersonData.getMany(PersonData.medications, known, options)))
        expect(error).toBeInstanceOf(ClinicalError.InvalidRequest)
        expect(error.field).toBe(field)
      }
      const notIterable = yield* Effect.flip(
        collect(PersonData.getMany(PersonData.medications, known[0] as unknown as Iterable<string>))
      )
      expect(notIterable).toMatchObject({ _tag: "InvalidRequest", field: "personUids" })
      expect((yield* mock.counters).tokenRequests).toBe(0)
    }).pipe(Effect.provide(client())))

  it.effect("a refused ApplicationId stops the batch: the rest are skipped, not sent", () =>
    Effect.gen(function*() {
      const mock = yield* MockClinicalServer.MockClinicalServer
      const input = Array.from({ length: 50 }, (_, i) => known[i % 3]!)
      const entries = yield* collect(PersonData.getMany(PersonData.medications, input))
      expect(entries).toHaveLength(50)
      const failures = entries.filter((entry) => entry.outcome._tag === "Failure")
      const skipped = entries.filter((entry) => entry.outcome._tag === "Skipped")
      // The calls already in flight when the token was refused fail; none after.
      expect(failures.length).toBeGreaterThanOrEqual(1)
      expect(failures.length).toBeLessThanOrEqual(4)
      expect(skipped).toHaveLength(50 - failures.length)
      for (const entry of failures) {
        expect(entry.outcome._tag === "Failure" && entry.outcome.error).toMatchObject({
          _tag: "Unauthorized",
          operation: "token"
        })
      }
      const stop = skipped[0]!.outcome._tag === "Skipped" ? skipped[0]!.outcome.stop : undefined
      expect(stop?.reason).toBe("CredentialsRefused")
      expect(stop?.error).toBeInstanceOf(ClinicalError.Unauthorized)
      const counters = yield* mock.counters
      expect(counters.dataRequests).toBe(0)
      expect(counters.tokenRequests).toBeLessThanOrEqual(2)
    }).pipe(Effect.provide(client({ applicationId: "0f8fad5b-d9cb-469f-a165-70867728950e" }))))

  it.effect("N transport failures in a row stop it; failures between successes do not", () =>
    Effect.gen(function*() {
      const mock = yield* MockClinicalServer.MockClinicalServer
      const input = Array.from({ length: 30 }, (_, i) => known[i % 3]!)
      yield* mock.injectFaults("medications", Array.from({ length: 30 }, () => MockClinicalServer.Fault.drop))
      const stopped = yield* collect(
        PersonData.getMany(PersonData.medications, input, { concurrency: 1, stopAfterTransportFailures: 5 })
      )
      expect(stopped.map((entry) => entry.outcome._tag)).toEqual([
        ...Array.from({ length: 5 }, () => "Failure"),
        ...Array.from({ length: 25 }, () => "Skipped")
      ])
      const last = stopped[29]!.outcome
      expect(last._tag === "Skipped" && last.stop.reason).toBe("TransportFailures")
      expect((yield* mock.counters).medicationRequests).toBe(5)

      yield* mock.clearFaults
      yield* mock.resetCounters
      const alternating = Array.from({ length: 30 }, (_, i) =>
        i % 2 === 0 ? MockClinicalServer.Fault.drop : MockClinicalServer.Fault.delay(0))
      yield* mock.injectFaults("medications", alternating)
      const interleaved = yield* collect(
        PersonData.getMany(PersonData.medications, input, { concurrency: 1, stopAfterTransportFailures: 2 })
      )
      expect(interleaved.filter((entry) =>
        entry.outcome._tag === "Skipped"
      )).toHaveLength(0)
      expect(interleaved.filter((entry) => entry.outcome._tag === "Failure")).toHaveLength(15)
      expect((yield* mock.counters).medicationRequests).toBe(30)
    }).pipe(Effect.provide(client())))

  it.effect("a refused date range stops it at the first person; a refused PersonUid fails that person alone", () =>
    Effect.gen(function*() {
      const mock = yield* MockClinicalServer.MockClinicalServer
      const badRange = yield* collect(
        PersonData.getMany(PersonData.medications, known, { startDate: "2024-13-01", concurrency: 1 })
      )
      expect(badRange.map((entry) => entry.outcome._tag)).toEqual(["Failure", "Skipped", "Skipped"])
      const skipped = badRange[1]!.outcome
      expect(skipped._tag === "Skipped" && skipped.stop).toMatchObject({
        reason: "InvalidRequest",
        error: { _tag: "InvalidRequest", field: "startDate" }
      })
      const badPerson = byIndex(
        yield* collect(PersonData.getMany(PersonData.medications, [known[0]!, "bad\nuid", known[1]!]))
      )
      expect(badPerson.map((entry) => entry.outcome._tag)).toEqual(["Success", "Failure", "Success"])
      expect((yield* mock.counters).medicationRequests).toBe(2)
    }).pipe(Effect.provide(client())))

  it.effect("random server faults: each failed person carries its typed error, the others their data", () =>
    Effect.gen(function*() {
      const mock = yield* MockClinicalServer.MockClinicalServer
      yield* mock.setRandomFaults("medications", {
        seed: 7,
        faults: [{ probability: 0.3, fault: MockClinicalServer.Fault.status(500) }]
      })
      const input = Array.from({ length: 200 }, (_, i) => known[i % 3]!)
      const entries = yield* collect(PersonData.getMany(PersonData.medications, input))
      expect(entries).toHaveLength(200)
      const failures = entries.filter((entry) => entry.outcome._tag === "Failure")
      const counters = yield* mock.counters
      expect(failures.length).toBe(counters.byStatus[500])
      expect(failures.length).toBeGreaterThan(30)
      for (const entry of failures) {
        expect(entry.outcome._tag === "Failure" && entry.outcome.error._tag).toBe("ServerError")
      }
      expect(entries.filter((entry) => entry.outcome._tag === "Success")).toHaveLength(200 - failures.length)
    }).pipe(Effect.provide(client())))

  it.effect("reports progress after every outcome: done, succeeded, failed, skipped", () =>
    Effect.gen(function*() {
      const seen: Array<PersonData.Progress> = []
      const input = [known[0]!, "unknown", known[1]!, known[2]!, "unknown-too"]
      yield* collect(PersonData.getMany(PersonData.medications, input, {
        concurrency: 2,
        onProgress: (progress) => Effect.sync(() => seen.push(progress))
      }))
      expect(seen.map((progress) => progress.done)).toEqual([1, 2, 3, 4, 5])
      expect(seen[4]).toMatchObject({ done: 5, succeeded: 3, failed: 2, skipped: 0, stopped: undefined })
    }).pipe(Effect.provide(client())))
})

describe("MedicationService.getMany", () => {
  it.effect("each person's medications, as `get` returns them", () =>
    Effect.gen(function*() {
      const entries = byIndex(yield* collect(MedicationService.getMany(known)))
      expect(entries.map((entry) => entry.outcome._tag === "Success" && entry.outcome.result.medications)).toEqual(
        persons.map((person) => person.medications)
      )
    }).pipe(Effect.provide(client())))
})

describe("batchTally: when a failure stops a batch", () => {
  const at = { operation: "medications", method: "POST", url: "http://h/p" }
  const table: ReadonlyArray<readonly [string, ClinicalError.ClinicalError, number, Tally.StopReason | undefined]> = [
    [
      "the token endpoint refuses the ApplicationId",
      new ClinicalError.Unauthorized({ ...at, operation: "token", status: 401 }),
      0,
      "CredentialsRefused"
    ],
    [
      "a data host refuses a fresh token",
      new ClinicalError.Unauthorized({ ...at, status: 401 }),
      0,
      "CredentialsRefused"
    ],
    ["a data host answers 419 twice", new ClinicalError.TokenExpired({ ...at, status: 419 }), 0, "CredentialsRefused"],
    [
      "the token endpoint answers 400",
      new ClinicalError.BadRequest({ ...at, operation: "token", status: 400 }),
      0,
      "CredentialsRefused"
    ],
    ["a data host answers 400: this person", new ClinicalError.BadRequest({ ...at, status: 400 }), 0, undefined],
    [
      "the token endpoint answers Success:false",
      new ClinicalError.ApiError({ ...at, operation: "token", status: 200, errorType: null, errorMessage: null }),
      0,
      "CredentialsRefused"
    ],
    [
      "Success:false for a person",
      new ClinicalError.ApiError({ ...at, status: 200, errorType: "X", errorMessage: null }),
      0,
      undefined
    ],
    [
      "a refused PersonUid",
      new ClinicalError.InvalidRequest({ operation: "medications", field: "personUid", reason: "r" }),
      0,
      undefined
    ],
    [
      "a refused operation",
      new ClinicalError.InvalidRequest({ operation: "x", field: "operation.path", reason: "r" }),
      0,
      "InvalidRequest"
    ],
    [
      "a refused end date",
      new ClinicalError.InvalidRequest({ operation: "x", field: "endDate", reason: "r" }),
      0,
      "InvalidRequest"
    ],
    [
      "a transport failure below the limit",
      new ClinicalError.TransportError({ ...at, reason: "Network", detail: "d" }),
      2,
      undefined
    ],
    [
      "the limit's transport failure",
      new ClinicalError.TransportError({ ...at, reason: "Network", detail: "d" }),
      3,
      "TransportFailures"
    ],
    [
      "a body too large, even at the limit: it is this person's",
      new ClinicalError.TransportError({ ...at, reason: "ResponseTooLarge", detail: "d" }),
      3,
      undefined
    ],
    ["a 500", new ClinicalError.ServerError({ ...at, status: 500 }), 0, undefined],
    ["a 429", new ClinicalError.RateLimited({ ...at, status: 429 }), 0, undefined]
  ]
  for (const [name, error, inARow, reason] of table) {
    it(`${name}: ${reason ?? "this person only"}`, () => {
      expect(Tally.stopReasonOf(error, inARow, 3)).toBe(reason)
    })
  }

  it("counts failures in a row, resets them on any other outcome, and keeps the first stop", () => {
    const network = new ClinicalError.TransportError({ ...at, reason: "Network", detail: "d" })
    const server = new ClinicalError.ServerError({ ...at, status: 500 })
    let tally: Tally.Tally<ClinicalError.ClinicalError> = Tally.failed(
      Tally.failed(Tally.initial, network, 3),
      network,
      3
    )
    expect(tally.transportFailuresInARow).toBe(2)
    expect(Tally.succeeded(tally).transportFailuresInARow).toBe(0)
    expect(Tally.failed(tally, server, 3).transportFailuresInARow).toBe(0)
    const tooLarge = new ClinicalError.TransportError({ ...at, reason: "ResponseTooLarge", detail: "d" })
    expect(Tally.failed(tally, tooLarge, 3)).toMatchObject({ transportFailuresInARow: 0, stop: undefined })
    tally = Tally.failed(tally, network, 3)
    expect(tally.stop).toEqual({ reason: "TransportFailures", error: network })
    const refused = new ClinicalError.Unauthorized({ ...at, operation: "token", status: 401 })
    expect(Tally.failed(tally, refused, 3).stop?.reason).toBe("TransportFailures")
    expect(Tally.skipped(tally)).toMatchObject({ skipped: 1, failed: 3 })
  })

  it("progress: the rate counts answered persons only", () => {
    const tally = { ...Tally.initial, succeeded: 30, failed: 10, skipped: 60 }
    expect(Tally.progressOf(tally, 2000)).toEqual({
      done: 100,
      succeeded: 30,
      failed: 10,
      skipped: 60,
      elapsedMillis: 2000,
      perSecond: 20,
      stopped: undefined
    })
    expect(Tally.progressOf(Tally.initial, 0).perSecond).toBe(0)
  })
})

describe("batchTally: when a person's call is sent again", () => {
  const at = { operation: "medications", method: "POST", url: "https://x.org/api" }
  const persistence: Tally.Persistence = { patienceMillis: 10_000, resends: 1 }
  const open = (retryAfterMillis: number) =>
    new ClinicalError.CircuitOpen({ operation: "medications", retryAfterMillis })

  it("an open circuit: after its retryAfterMillis (at least 1 ms), while the waits fit the patience", () => {
    expect(Tally.againAfterMillis(open(500), 0, 0, persistence)).toBe(500)
    expect(Tally.againAfterMillis(open(0), 0, 0, persistence)).toBe(1)
    expect(Tally.againAfterMillis(open(2000), 8000, 1, persistence)).toBe(2000)
    expect(Tally.againAfterMillis(open(2000), 8001, 0, persistence)).toBeUndefined()
    expect(Tally.againAfterMillis(open(1), 0, 0, { ...persistence, patienceMillis: 0 })).toBeUndefined()
  })

  it("the token's outage (no token had, the endpoint down): waited for as an open circuit is, a second at a time or its Retry-After", () => {
    const token = { operation: "token", method: "POST", url: "https://auth.example/api/Server/Token" }
    const outages: ReadonlyArray<readonly [ClinicalError.ClinicalError, number]> = [
      [new ClinicalError.ServerError({ ...token, status: 503 }), 1000],
      [new ClinicalError.ServerError({ ...token, status: 503, retryAfterMillis: 4000 }), 4000],
      [new ClinicalError.RateLimited({ ...token, status: 429, retryAfterMillis: 200 }), 1000],
      [new ClinicalError.TransportError({ ...token, reason: "Timeout", detail: "10 s" }), 1000],
      [new ClinicalError.TransportError({ ...token, reason: "Network", detail: "ECONNREFUSED" }), 1000]
    ]
    for (const [error, wait] of outages) {
      expect(Tally.isTokenOutage(error), error._tag).toBe(true)
      // However often it was sent again: only the patience bounds it.
      expect(Tally.againAfterMillis(error, 0, 5, persistence), error._tag).toBe(wait)
      expect(Tally.againAfterMillis(error, 10_000 - wait, 0, persistence), error._tag).toBe(wait)
      expect(Tally.againAfterMillis(error, 10_001 - wait, 0, persistence), error._tag).toBeUndefined()
    }
    // Refused credentials are not an outage (the batch stops on them); a data request's 503 is this person's.
    expect(Tally.isTokenOutage(new ClinicalError.Unauthorized({ ...token, status: 401 }))).toBe(false)
    expect(Tally.isTokenOutage(new ClinicalError.ServerError({ ...at, status: 503 }))).toBe(false)
  })

  it("a failure worth retrying: once more, after its Retry-After; anything else is taken", () => {
    const transient: ReadonlyArray<readonly [ClinicalError.ClinicalError, number]> = [
      [new ClinicalError.ServerError({ ...at, status: 503 }), 0],
      [new ClinicalError.ServerError({ ...at, status: 503, retryAfterMillis: 1500 }), 1500],
      [new ClinicalError.RateLimited({ ...at, status: 429, retryAfterMillis: 1000 }), 1000],
      [new ClinicalError.TransportError({ ...at, reason: "Network", detail: "ECONNRESET" }), 0],
      [new ClinicalError.TransportError({ ...at, reason: "Timeout", detail: "30 s" }), 0]
    ]
    for (const [error, wait] of transient) {
      expect(Tally.againAfterMillis(error, 0, 0, persistence), error._tag).toBe(wait)
      expect(Tally.againAfterMillis(error, 0, 1, persistence), error._tag).toBeUndefined()
      expect(Tally.againAfterMillis(error, 0, 0, { ...persistence, resends: 0 }), error._tag).toBeUndefined()
    }
    for (
      const error of [
        new ClinicalError.ServerError({ ...at, status: 501 }),
        new ClinicalError.TransportError({ ...at, reason: "Deadline", detail: "60 s" }),
        new ClinicalError.BadRequest({ ...at, status: 400 }),
        new ClinicalError.ApiError({ ...at, status: 200, errorType: "PersonNotFound", errorMessage: null })
      ]
    ) expect(Tally.againAfterMillis(error, 0, 0, persistence), error._tag).toBeUndefined()
  })
})
