/** docs/testing.md's shorter snippets, run: each region is copied into the page (npm run docs:snippets). */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { ClinicalClient, HttpTransport, MedicationService, PersonAuthentication } from "effect-clinical"
// #region import
import { MockClinicalServer } from "effect-clinical/testing"
// #endregion

const inMemory = ClinicalClient.layer({
  baseUrl: "https://openapi.example.test",
  applicationId: MockClinicalServer.demoApplicationId
})

describe("docs/testing.md", () => {
  it.effect("a fixture person logs in and reads their data", () =>
    Effect.gen(function*() {
      // #region fixture-login
      const eleanor = MockClinicalServer.fixturePersons[0]!
      const personUid = yield* PersonAuthentication.authenticate({
        passCode: eleanor.passCode,
        dateOfBirth: eleanor.dateOfBirth
      })
      const { medications } = yield* MedicationService.get(personUid) // Eleanor's 5
      // #endregion
      expect(medications).toHaveLength(5)
    }).pipe(Effect.provide(inMemory.pipe(Layer.provide(MockClinicalServer.layerTransport())))))

  it.effect("hand-written responses", () =>
    Effect.gen(function*() {
      // #region hand-written
      const transport = HttpTransport.layerMemory((request) =>
        Effect.succeed(
          request.url.endsWith("/api/Server/Token")
            ? HttpTransport.jsonResponse(200, { Token: "abc", TokenType: "Bearer" }, {
              TOKEN_EXPIRES: "Sun, 22 Nov 2026 09:00:00 GMT",
              Date: "Sun, 22 Nov 2026 08:00:00 GMT"
            })
            : HttpTransport.jsonResponse(200, { Medications: [], Success: true })
        )
      )
      // #endregion
      const { medications } = yield* MedicationService.get("any-person").pipe(
        Effect.provide(inMemory.pipe(Layer.provide(transport)))
      )
      expect(medications).toEqual([])
    }))
})
