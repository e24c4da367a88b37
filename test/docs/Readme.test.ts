/**
 * The README's snippets, run: each region below is copied into README.md (npm run docs:snippets).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted, Stream } from "effect"
import { ClinicalClient, HttpTransport, MedicationService, PersonAuthentication, PersonData } from "effect-clinical"
import { ApiError, createClinicalClient, isClinicalError, reveal } from "effect-clinical/promise"
import { MockClinicalServer } from "effect-clinical/testing"
import { EventEmitter } from "node:events"

const eleanor = MockClinicalServer.fixturePersons[0]!

/** The whole client against the mock in memory, and the mock's controls. */
const mockClient = ClinicalClient.layer({
  baseUrl: "https://openapi.example.test",
  applicationId: MockClinicalServer.demoApplicationId
}).pipe(Layer.provideMerge(MockClinicalServer.layerTransport()))

describe("README", () => {
  it.effect("Getting a PersonUid", () =>
    Effect.gen(function*() {
      const passCodeFromTheForm = eleanor.passCode
      // #region getting-a-personuid
      const personUid = yield* PersonAuthentication.authenticate({
        passCode: Redacted.make(passCodeFromTheForm), // a string or a Redacted
        dateOfBirth: "1945-03-14" // a Date, YYYY-MM-DD or MM/DD/YYYY; sent as MM/DD/YYYY
      })
      // personUid is a Redacted<string>: save Redacted.value(personUid) with the account, never log it.
      const { medications } = yield* MedicationService.get(personUid)
      // #endregion
      expect(Redacted.value(personUid)).toBe(eleanor.personUid)
      expect(medications).toEqual(eleanor.medications)
    }).pipe(Effect.provide(mockClient)))

  it.effect("Every person-data operation", () =>
    Effect.gen(function*() {
      const personUid = Redacted.make(eleanor.personUid)
      // #region person-data
      const { items, raw } = yield* PersonData.get(PersonData.uniqueDeviceIdentifiers, personUid)
      const { items: ethnicities } = yield* PersonData.getAs(PersonData.ethnicities, PersonData.Ethnicity, personUid)
      // #endregion
      expect(items).toEqual(eleanor.uniqueDeviceIdentifiers)
      expect(raw).toMatchObject({ Success: true })
      expect(ethnicities).toEqual([{ Name: "Not Hispanic or Latino", Code: "2186-5" }])
    }).pipe(Effect.provide(mockClient)))

  it.effect("Many persons", () =>
    Effect.gen(function*() {
      const personUids = MockClinicalServer.fixturePersons.map((person) => person.personUid)
      const saved: Array<number> = []
      const save = (index: number, items: ReadonlyArray<PersonData.Item>) =>
        Effect.sync(() => saved[index] = items.length)
      // #region get-many
      // Any iterable (read a few persons ahead, so a generator of millions is fine) or a Stream.
      yield* PersonData.getMany(PersonData.medications, personUids, { concurrency: 16 }).pipe(
        Stream.runForEach(({ index, outcome }) => {
          switch (outcome._tag) {
            case "Success": // index: the person's position in the input
              return save(index, outcome.result.items)
            case "Failure": // this person only: the others go on
              return Effect.logWarning(`person ${index} failed: ${outcome.error.message}`)
            case "Skipped": // not sent: the batch stopped (CredentialsRefused, ...)
              return Effect.logWarning(`person ${index} skipped: ${outcome.stop.reason}`)
          }
        })
      )
      // #endregion
      expect(saved).toEqual(MockClinicalServer.fixturePersons.map((person) => person.medications.length))
    }).pipe(Effect.provide(mockClient)))

  it.effect("An operation the library does not know", () =>
    Effect.gen(function*() {
      const personUid = eleanor.personUid
      // #region custom-operation
      const allergies = PersonData.operation({
        name: "allergies",
        path: "/api/clinical/allergy/get",
        collection: "Allergies"
      })
      const { items } = yield* PersonData.get(allergies, personUid, { startDate: "2024-01-01" })
      // #endregion
      expect(items).toEqual([{ Substance: "Penicillin" }])
    }).pipe(
      Effect.provide(
        ClinicalClient.layer({
          baseUrl: "https://openapi.example.test",
          applicationId: MockClinicalServer.demoApplicationId
        })
      ),
      // The mock does not know allergies: this transport answers them and hands the rest to the mock.
      Effect.provide(
        Layer.effect(
          HttpTransport.HttpTransport,
          Effect.map(MockClinicalServer.MockClinicalServer, (mock) =>
            HttpTransport.memory((request) =>
              request.url.endsWith("/api/clinical/allergy/get")
                ? Effect.succeed(
                  HttpTransport.jsonResponse(200, { Allergies: [{ Substance: "Penicillin" }], Success: true })
                )
                : mock.handle(request)
            ))
        ).pipe(Layer.provide(MockClinicalServer.layer()))
      )
    ))

  it("Without Effect: the Promise API", async () => {
    const mock = await MockClinicalServer.start()
    const [baseUrl, authUrl, applicationId] = [mock.url, mock.url, mock.applicationId]
    const passCode = mock.persons[0]!.passCode
    // A user store, and an HTTP response as node:http and Express hand one to a handler.
    const saved = new Map<string, string>()
    const users = {
      save: async (user: { personUid: string }) => void saved.set("me", JSON.stringify(user)),
      load: async (): Promise<{ personUid: string }> => JSON.parse(saved.get("me")!)
    }
    const res = new EventEmitter()
    const answers: Array<unknown> = []
    try {
      // #region promise-api
      // Once per process: one token cache, one connection pool. A bad setting throws InvalidConfig here.
      const clinical = createClinicalClient({ baseUrl, authUrl, applicationId, requestTimeout: "10s" })

      // Once per patient: authenticate gives the PersonUid Redacted (JSON of it is "<redacted>");
      // reveal() gives its text, to store as the patient identifier it is.
      const personUid = await clinical.authenticate({ passCode, dateOfBirth: "1945-03-14" })
      await users.save({ personUid: reveal(personUid) })

      // In a request handler (node:http, Express): the call is cancelled when the caller hangs up.
      const hangUp = new AbortController()
      res.on("close", () => hangUp.abort())
      const user = await users.load()
      const { medications } = await clinical.medications(user.personUid, { signal: hangUp.signal })
      const { items } = await clinical.getAs(PersonData.ethnicities, PersonData.Ethnicity, user.personUid)
      try {
        await clinical.medications("an-unknown-person")
      } catch (error) {
        if (error instanceof ApiError) console.log(error.errorType, error.message) // the library's own errors
        else if (!isClinicalError(error)) throw error // InvalidConfig and ClientClosed are the library's too
      }
      await clinical.close() // at shutdown
      // #endregion
      answers.push(medications.length, items)
    } finally {
      await mock.close()
    }
    expect(answers).toEqual([5, [{ Name: "Not Hispanic or Latino", Code: "2186-5" }]])
  })
})
