/**
 * The Effect 4 line's batches (`PersonData.getMany`, `MedicationService.getMany`) over the
 * in-memory transport: one outcome per person, what goes over the wire, the bound on calls in
 * flight and on persons read ahead, the early stops that skip the rest, refused options, progress
 * (the rules are the core's, core/batchRun.ts and core/batchTally.ts; these check this line's run).
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Layer, Stream } from "effect"
import * as HttpDate from "../../core/httpDate.js"
import * as ClinicalClient from "../src/ClinicalClient.js"
import type * as ClinicalConfig from "../src/ClinicalConfig.js"
import type { InvalidConfig } from "../src/ClinicalError.js"
import * as HttpTransport from "../src/HttpTransport.js"
import * as MedicationService from "../src/MedicationService.js"
import * as PersonData from "../src/PersonData.js"

const APPLICATION_ID = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"
const HOUR = 3_600_000
const PERSONS = ["person-a", "person-b", "person-c"] as const

/** What a data request's answer is: the medications of a known person, a failure, or a transport failure. */
type Answer = HttpTransport.TransportResponse | "drop"

/** The medications the service holds for a known person. */
const medicationsOf = (uid: string) => [{ Name: `for ${uid}` }]

/** The service answers a known person with their medications, anyone else with `Success: false`. */
const byPerson = (uid: string): Answer =>
  (PERSONS as ReadonlyArray<string>).includes(uid)
    ? HttpTransport.jsonResponse(200, { Success: true, Medications: medicationsOf(uid) })
    : HttpTransport.jsonResponse(200, { Success: false, ErrorType: "PersonNotFound", ErrorMessage: "unknown" })

/**
 * The service in memory: the token endpoint issues `tok-1`, `tok-2`, ...; a data request (its
 * PersonUid and its number, from 1) is answered by `answer`, after a few turns of the scheduler so
 * that calls overlap. Every data request's PersonUid is kept, and the most in flight at once.
 */
const service = (answer: (uid: string, n: number) => Answer = byPerson) => {
  const state = { tokens: 0, data: [] as Array<string>, inFlight: 0, most: 0 }
  const layer = HttpTransport.layerMemory((request) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      if (request.url.endsWith("/api/Server/Token")) {
        state.tokens++
        return HttpTransport.jsonResponse(200, { Token: `tok-${state.tokens}`, TokenType: "Bearer" }, {
          Date: HttpDate.format(now),
          TOKEN_EXPIRES: HttpDate.format(now + HOUR)
        })
      }
      const uid = (JSON.parse(HttpTransport.wireBody(request)!) as { personuid: string }).personuid
      state.data.push(uid)
      const n = state.data.length
      state.most = Math.max(state.most, ++state.inFlight)
      for (let i = 0; i < 5; i++) yield* Effect.yieldNow
      state.inFlight--
      const answered = answer(uid, n)
      return answered === "drop"
        ? yield* Effect.fail(HttpTransport.transportError(request, "Network", "connection reset"))
        : answered
    })
  )
  return { state, layer }
}

const client = (
  transport: Layer.Layer<HttpTransport.HttpTransport, InvalidConfig>,
  options: Partial<ClinicalConfig.Options> = {}
) =>
  ClinicalClient.layer({
    baseUrl: "https://api.example",
    applicationId: APPLICATION_ID,
    // No retries, so that each fault is one outcome, unless a test says otherwise.
    maxRetries: 0,
    retryBaseDelay: "1 millis",
    retryMaxDelay: "5 millis",
    ...options
  }).pipe(Layer.provide(transport))

const byIndex = <A extends { readonly index: number }>(entries: ReadonlyArray<A>) =>
  [...entries].sort((a, b) => a.index - b.index)

const tags = (entries: ReadonlyArray<PersonData.Entry<unknown>>) => entries.map((entry) => entry.outcome._tag)

describe("PersonData.getMany (Effect 4)", () => {
  it.live("one entry per person with its index, each the person's own items; an unknown person fails alone", () =>
    Effect.gen(function*() {
      const { layer, state } = service()
      const input = [PERSONS[0], "unknown-person", PERSONS[1], PERSONS[2]]
      const entries = byIndex(
        yield* Stream.runCollect(PersonData.getMany(PersonData.medications, input)).pipe(Effect.provide(client(layer)))
      )
      assert.deepStrictEqual(entries.map((entry) => entry.index), [0, 1, 2, 3])
      assert.deepStrictEqual(tags(entries), ["Success", "Failure", "Success", "Success"])
      for (const i of [0, 2, 3]) {
        const outcome = entries[i]!.outcome
        assert.deepStrictEqual(outcome._tag === "Success" && outcome.result.items, medicationsOf(input[i]!))
      }
      const failure = entries[1]!.outcome
      assert.deepInclude(failure._tag === "Failure" ? failure.error : {}, {
        _tag: "ApiError",
        operation: "medications"
      })
      assert.strictEqual(state.tokens, 1)
      assert.deepStrictEqual([...state.data].sort(), [...input].sort())
    }))

  it.live("at most `concurrency` calls at the service; a generator of 10,000 persons read a bounded way ahead of the calls", () =>
    Effect.gen(function*() {
      const { layer, state } = service(() => HttpTransport.jsonResponse(200, { Success: true, Medications: [] }))
      let pulled = 0
      let mostAhead = 0
      function* generated() {
        for (let i = 0; i < 10_000; i++) {
          pulled++
          // Persons read but not yet sent: what the batch holds, whatever the input's size.
          mostAhead = Math.max(mostAhead, pulled - state.data.length)
          yield `person-${i}`
        }
      }
      const entries = yield* Stream.runCollect(
        PersonData.getMany(PersonData.medications, generated(), { concurrency: 3 })
      ).pipe(Effect.provide(client(layer, { maxConcurrentRequests: 64 })))
      assert.strictEqual(entries.length, 10_000)
      assert.deepStrictEqual(byIndex(entries).map((entry) => entry.index), Array.from({ length: 10_000 }, (_, i) => i))
      assert.isTrue(entries.every((entry) => entry.outcome._tag === "Success"))
      assert.strictEqual(state.most, 3)
      assert.strictEqual(state.data.length, 10_000)
      assert.isAtMost(mostAhead, 100)

      // A consumer that stops early stops the reading too.
      pulled = 0
      const first = yield* Stream.runCollect(
        PersonData.getMany(PersonData.medications, generated(), { concurrency: 3 }).pipe(Stream.take(30))
      ).pipe(Effect.provide(client(service().layer)))
      assert.strictEqual(first.length, 30)
      assert.isBelow(pulled, 200)
    }))

  it.live("the client's maxConcurrentRequests is the default and the most: a larger concurrency is held to it", () =>
    Effect.gen(function*() {
      const { layer, state } = service(() => HttpTransport.jsonResponse(200, { Success: true, Medications: [] }))
      const input = Array.from({ length: 40 }, (_, i) => `person-${i}`)
      yield* Stream.runDrain(PersonData.getMany(PersonData.medications, input, { concurrency: 50 })).pipe(
        Effect.provide(client(layer, { maxConcurrentRequests: 4, adaptiveConcurrency: false }))
      )
      assert.strictEqual(state.data.length, 40)
      assert.strictEqual(state.most, 4)
    }))

  it.live("a Stream input: its persons by index; a Stream that fails fails the batch with its own error", () =>
    Effect.gen(function*() {
      const { layer } = service()
      const entries = yield* Stream.runCollect(PersonData.getMany(PersonData.medications, Stream.fromIterable(PERSONS)))
        .pipe(Effect.provide(client(layer)))
      assert.deepStrictEqual(byIndex(entries).map((entry) => entry.index), [0, 1, 2])
      assert.deepStrictEqual(tags(entries), ["Success", "Success", "Success"])

      const failing = Stream.concat(Stream.fromIterable(PERSONS), Stream.fail("the persons file went away" as const))
      const error = yield* Effect.flip(
        Stream.runDrain(PersonData.getMany(PersonData.medications, failing)).pipe(Effect.provide(client(layer)))
      )
      assert.strictEqual(error, "the persons file went away")
    }))

  it.live("a data host refusing the token twice (401): Unauthorized, then every other person Skipped, not sent", () =>
    Effect.gen(function*() {
      const { layer, state } = service(() => HttpTransport.jsonResponse(401, {}))
      const input = Array.from({ length: 20 }, (_, i) => PERSONS[i % 3]!)
      const entries = yield* Stream.runCollect(
        PersonData.getMany(PersonData.medications, input, { concurrency: 1 })
      ).pipe(Effect.provide(client(layer)))
      assert.deepStrictEqual(tags(entries), ["Failure", ...Array.from({ length: 19 }, () => "Skipped")])
      const first = entries[0]!.outcome
      assert.deepInclude(first._tag === "Failure" ? first.error : {}, { _tag: "Unauthorized", status: 401 })
      for (const entry of entries.slice(1)) {
        const outcome = entry.outcome
        assert.strictEqual(outcome._tag === "Skipped" && outcome.stop.reason, "CredentialsRefused")
        assert.strictEqual(outcome._tag === "Skipped" && outcome.stop.error._tag, "Unauthorized")
      }
      // The person's call and its one resend with a fresh token; none for the skipped.
      assert.strictEqual(state.data.length, 2)
      assert.strictEqual(state.tokens, 2)
    }))

  it.live("N transport failures in a row stop it (TransportFailures); failures between successes do not", () =>
    Effect.gen(function*() {
      const input = Array.from({ length: 30 }, (_, i) => PERSONS[i % 3]!)
      const down = service(() => "drop")
      const stopped = yield* Stream.runCollect(
        PersonData.getMany(PersonData.medications, input, { concurrency: 1, stopAfterTransportFailures: 5 })
      ).pipe(Effect.provide(client(down.layer)))
      assert.deepStrictEqual(tags(stopped), [
        ...Array.from({ length: 5 }, () => "Failure"),
        ...Array.from({ length: 25 }, () => "Skipped")
      ])
      const last = stopped[29]!.outcome
      assert.strictEqual(last._tag === "Skipped" && last.stop.reason, "TransportFailures")
      assert.strictEqual(last._tag === "Skipped" && last.stop.error._tag, "TransportError")
      assert.strictEqual(down.state.data.length, 5)

      const flaky = service((uid, n) => n % 2 === 1 ? "drop" : byPerson(uid))
      const interleaved = yield* Stream.runCollect(
        PersonData.getMany(PersonData.medications, input, { concurrency: 1, stopAfterTransportFailures: 2 })
      ).pipe(Effect.provide(client(flaky.layer)))
      assert.strictEqual(interleaved.filter((entry) => entry.outcome._tag === "Skipped").length, 0)
      assert.strictEqual(interleaved.filter((entry) => entry.outcome._tag === "Failure").length, 15)
      assert.strictEqual(flaky.state.data.length, 30)
    }))

  it.live("a refused date range stops it at the first person, nothing sent; a refused PersonUid fails that person alone", () =>
    Effect.gen(function*() {
      const { layer, state } = service()
      yield* Effect.gen(function*() {
        const badRange = yield* Stream.runCollect(
          PersonData.getMany(PersonData.medications, PERSONS, { startDate: "2024-13-01", concurrency: 1 })
        )
        assert.deepStrictEqual(tags(badRange), ["Failure", "Skipped", "Skipped"])
        const skipped = badRange[1]!.outcome
        assert.strictEqual(skipped._tag === "Skipped" && skipped.stop.reason, "InvalidRequest")
        assert.deepInclude(skipped._tag === "Skipped" ? skipped.stop.error : {}, {
          _tag: "InvalidRequest",
          field: "startDate"
        })
        assert.strictEqual(state.data.length, 0)

        const badPerson = byIndex(
          yield* Stream.runCollect(PersonData.getMany(PersonData.medications, [PERSONS[0], "bad\nuid", PERSONS[1]]))
        )
        assert.deepStrictEqual(tags(badPerson), ["Success", "Failure", "Success"])
        assert.strictEqual(state.data.length, 2)
      }).pipe(Effect.provide(client(layer)))
    }))

  it.live("refused batch options fail the stream with InvalidRequest naming the option, before anything is sent", () =>
    Effect.gen(function*() {
      const { layer, state } = service()
      yield* Effect.gen(function*() {
        const cases: ReadonlyArray<readonly [PersonData.ManyOptions, string]> = [
          [{ concurrency: 0 }, "concurrency"],
          [{ concurrency: 1.5 }, "concurrency"],
          [{ stopAfterTransportFailures: 0 }, "stopAfterTransportFailures"],
          [{ outagePatience: -1 }, "outagePatience"],
          [{ outagePatience: "Infinity" }, "outagePatience"],
          [{ onProgress: "yes" as unknown as undefined }, "onProgress"],
          // Options that are not an object are refused, not taken for none.
          [5 as unknown as PersonData.ManyOptions, "options"]
        ]
        for (const [options, field] of cases) {
          const error = yield* Effect.flip(
            Stream.runDrain(PersonData.getMany(PersonData.medications, PERSONS, options))
          )
          assert.deepInclude(error, { _tag: "InvalidRequest", operation: "medications", field })
        }
        const notPersons = yield* Effect.flip(
          Stream.runDrain(PersonData.getMany(PersonData.medications, 42 as unknown as Iterable<string>))
        )
        assert.deepInclude(notPersons, { _tag: "InvalidRequest", field: "personUids" })
      }).pipe(Effect.provide(client(layer)))
      assert.strictEqual(state.tokens, 0)
      assert.strictEqual(state.data.length, 0)
    }))

  it.live("reports the totals after every outcome: done, succeeded, failed, skipped", () =>
    Effect.gen(function*() {
      const { layer } = service()
      const seen: Array<PersonData.Progress> = []
      const input = [PERSONS[0], "unknown", PERSONS[1], PERSONS[2], "unknown-too"]
      yield* Stream.runDrain(PersonData.getMany(PersonData.medications, input, {
        concurrency: 2,
        onProgress: (progress) => Effect.sync(() => seen.push(progress))
      })).pipe(Effect.provide(client(layer)))
      assert.deepStrictEqual(seen.map((progress) => progress.done), [1, 2, 3, 4, 5])
      assert.deepInclude(seen[4], { done: 5, succeeded: 3, failed: 2, skipped: 0, stopped: undefined })

      const stopping: Array<PersonData.Progress> = []
      yield* Stream.runDrain(PersonData.getMany(PersonData.medications, PERSONS, {
        concurrency: 1,
        endDate: "2024-02-30",
        onProgress: (progress) => Effect.sync(() => stopping.push(progress))
      })).pipe(Effect.provide(client(layer)))
      assert.deepInclude(stopping[2], { done: 3, succeeded: 0, failed: 1, skipped: 2, stopped: "InvalidRequest" })
    }))

  it.live("a failure worth retrying is sent once more when the client retries; an open circuit past the patience stops it (ServiceDown)", () =>
    Effect.gen(function*() {
      // The call's own retry (maxRetries 1), then the batch's one resend: the third request answers.
      const busy = service((uid, n) => n <= 2 ? HttpTransport.jsonResponse(503, {}) : byPerson(uid))
      const resent = yield* Stream.runCollect(
        PersonData.getMany(PersonData.medications, [PERSONS[0]])
      ).pipe(Effect.provide(client(busy.layer, { maxRetries: 1 })))
      assert.deepStrictEqual(tags(resent), ["Success"])
      assert.strictEqual(busy.state.data.length, 3)

      const down = service(() => HttpTransport.jsonResponse(500, {}))
      const entries = yield* Stream.runCollect(
        PersonData.getMany(PersonData.medications, Array.from({ length: 10 }, () => PERSONS[0]), {
          concurrency: 1,
          outagePatience: 0
        })
      ).pipe(
        Effect.provide(client(down.layer, {
          circuitBreakerThreshold: 3,
          circuitBreakerCooldown: "1 minute",
          circuitBreakerMaxCooldown: "1 minute"
        }))
      )
      assert.deepStrictEqual(tags(entries), [
        "Failure",
        "Failure",
        "Failure",
        "Failure",
        ...Array.from({ length: 6 }, () => "Skipped")
      ])
      const refused = entries[3]!.outcome
      assert.strictEqual(refused._tag === "Failure" && refused.error._tag, "CircuitOpen")
      const skipped = entries[9]!.outcome
      assert.strictEqual(skipped._tag === "Skipped" && skipped.stop.reason, "ServiceDown")
      assert.strictEqual(down.state.data.length, 3)
    }))
})

describe("MedicationService.getMany (Effect 4)", () => {
  it.live("each person's medications, as `get` returns them, by index", () =>
    Effect.gen(function*() {
      const { layer } = service()
      const entries = byIndex(
        yield* Stream.runCollect(MedicationService.getMany(PERSONS)).pipe(Effect.provide(client(layer)))
      )
      assert.deepStrictEqual(
        entries.map((entry) => entry.outcome._tag === "Success" && entry.outcome.result.medications),
        PERSONS.map(medicationsOf)
      )
      assert.deepStrictEqual(entries.map((entry) => entry.index), [0, 1, 2])
    }))
})
