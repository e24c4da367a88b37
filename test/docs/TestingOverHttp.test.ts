/** docs/testing.md, "Over real HTTP": this file's region is the snippet, run as the test it shows. */
// #region over-http
import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { ClinicalClient, MedicationService } from "effect-clinical"
import { MockClinicalServer } from "effect-clinical/testing"

it.scopedLive("reads over loopback", () =>
  Effect.gen(function*() {
    const mock = yield* MockClinicalServer.make()
    const baseUrl = yield* MockClinicalServer.serve(mock) // http://127.0.0.1:<free port>; closed with the scope
    const client = ClinicalClient.layerUndici({ baseUrl, applicationId: MockClinicalServer.demoApplicationId })
    const { medications } = yield* MedicationService.get(mock.persons[0]!.personUid).pipe(Effect.provide(client))
    expect(medications).toHaveLength(5)
  }))
// #endregion
