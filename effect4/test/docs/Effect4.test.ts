/**
 * docs/effect4.md's snippets, run on the Effect 4 line: each region below is copied into the page
 * (npm run docs:snippets, from the repository's root).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted, Schema } from "effect"
import { ClinicalClient, MedicationService, PersonAuthentication, PersonData } from "effect-clinical"
import { createClinicalClient } from "effect-clinical/promise"
import { MockClinicalServer } from "effect-clinical/testing"

const eleanor = MockClinicalServer.fixturePersons[0]!

describe("docs/effect4.md", () => {
  it.effect("the same calls, in Effect 4: errors by tag, a Schema of your own, the mock in memory", () =>
    Effect.gen(function*() {
      // #region calls
      const Medication = Schema.Struct({ Name: Schema.String, Strength: Schema.optional(Schema.String) })

      const program = Effect.gen(function*() {
        const personUid = yield* PersonAuthentication.authenticate({
          passCode: Redacted.make("EW-2719-KQ"),
          dateOfBirth: "1945-03-14"
        })
        const { medications } = yield* MedicationService.getAs(Medication, personUid)
        const { items: devices } = yield* PersonData.get(PersonData.uniqueDeviceIdentifiers, personUid)
        return { medications, devices: devices.length }
      }).pipe(
        // The same tags and fields as the Effect 3 line's errors.
        Effect.catchTag("Unauthorized", () => Effect.succeed({ medications: [], devices: 0 }))
      )

      // The whole client over the mock in memory: no network, TestClock drives it.
      const client = ClinicalClient.layer({
        baseUrl: "https://openapi.example.test",
        applicationId: MockClinicalServer.demoApplicationId
      }).pipe(Layer.provideMerge(MockClinicalServer.layerTransport()))

      const result = yield* program.pipe(Effect.provide(client))
      // #endregion
      assert.deepStrictEqual(result.medications.map((m) => m.Name), eleanor.medications.map((m) => m.Name))
      assert.strictEqual(result.devices, eleanor.uniqueDeviceIdentifiers?.length)
    }))

  it.live("the Promise client, the same on both lines", () =>
    Effect.promise(async () => {
      const mock = await MockClinicalServer.start()
      const { applicationId, url: baseUrl } = mock
      const personUid = eleanor.personUid
      // #region promise
      const clinical = createClinicalClient({ baseUrl, applicationId })
      const { medications } = await clinical.medications(personUid)
      await clinical.close()
      // #endregion
      await mock.close()
      assert.strictEqual(medications.length, eleanor.medications.length)
    }))
})
