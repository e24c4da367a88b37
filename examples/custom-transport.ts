/**
 * Plugging in a transport of your own choosing: here `@effect/platform`'s fetch client, through
 * `HttpTransport.layerHttpClient`. Any `HttpClient.HttpClient` works the same way (NodeHttpClient,
 * a client with your own middleware, ...). Runs against the mock on loopback: no network needed.
 */
import { FetchHttpClient } from "@effect/platform"
import { Console, Effect, Layer } from "effect"
import { ClinicalClient, HttpTransport, MedicationService } from "effect-clinical"
import { MockClinicalServer } from "effect-clinical/testing"
import { runMain } from "./support/runMain.js"

const main = Effect.gen(function*() {
  const mock = yield* MockClinicalServer.make()
  const baseUrl = yield* MockClinicalServer.serve(mock)

  const client = ClinicalClient.layer({ baseUrl, applicationId: MockClinicalServer.demoApplicationId }).pipe(
    Layer.provide(HttpTransport.layerHttpClient),
    Layer.provide(FetchHttpClient.layer)
  )

  const person = mock.persons[2]!
  const { medications } = yield* MedicationService.get(person.personUid).pipe(Effect.provide(client))
  yield* Console.log(`${person.displayName}: ${medications.length} medications, fetched through FetchHttpClient`)
  for (const medication of medications) yield* Console.log(`  - ${medication.Name} ${medication.Strength}`)
})

runMain(Effect.scoped(main))
