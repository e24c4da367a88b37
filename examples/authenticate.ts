/**
 * Getting a PersonUid. A patient types the pass code they received from their doctor and their
 * date of birth into your app; `PersonAuthentication.authenticate` exchanges them for the
 * PersonUid, which your application stores and passes to every data call.
 *
 * Runs against the built-in mock on loopback (no credentials, no network):
 * `npx tsx examples/authenticate.ts`.
 */
import { Console, Effect, Redacted } from "effect"
import { ClinicalClient, MedicationService, PersonAuthentication, PersonData } from "effect-clinical"
import { MockClinicalServer } from "effect-clinical/testing"
import { runMain } from "./support/runMain.js"

const program = Effect.gen(function*() {
  const mock = yield* MockClinicalServer.make()
  const baseUrl = yield* MockClinicalServer.serve(mock)
  const eleanor = mock.persons[0]!

  yield* Effect.gen(function*() {
    // What the patient typed in. The pass code is a secret: keep it Redacted.
    const personUid = yield* PersonAuthentication.authenticate({
      passCode: Redacted.make(eleanor.passCode),
      dateOfBirth: "1945-03-14"
    })
    // The PersonUid identifies a patient: store it with the patient's account, never log it.
    yield* Console.log(`Authenticated; PersonUid obtained (printed redacted: ${personUid})`)

    const { medications } = yield* MedicationService.get(personUid)
    yield* Console.log(`${medications.length} medication(s): ${medications.map((m) => m.Name).join(", ")}`)

    const { items } = yield* PersonData.getAs(PersonData.ethnicities, PersonData.Ethnicity, personUid)
    yield* Console.log(`Ethnicities: ${items.map((e) => `${e.Name} (${e.Code})`).join(", ")}`)

    // A wrong pass code is the service's answer, typed. It is not retried: a pass code may be single-use.
    const refused = yield* Effect.flip(
      PersonAuthentication.authenticate({ passCode: "not-the-code", dateOfBirth: "1945-03-14" })
    )
    yield* Console.log(`A wrong pass code: ${refused._tag}: ${refused.message}`)
  }).pipe(Effect.provide(ClinicalClient.layerUndici({ baseUrl, applicationId: MockClinicalServer.demoApplicationId })))
})

runMain(Effect.scoped(program))
