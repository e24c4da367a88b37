/**
 * A person-data operation the library does not know: defined in one line, given the request, the
 * envelope, the retries and the typed errors; and definitions that are refused.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { ClinicalError, PersonData } from "effect-clinical"
import * as Fake from "./support/FakeService.js"

describe("PersonData: an operation the library does not know", () => {
  const allergies = PersonData.operation({
    name: "allergies",
    path: "/api/clinical/allergy/get",
    collection: "Allergies"
  })

  it.effect("is one line, and gets the request, the envelope, the retries and the typed errors", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        yield* fake.scriptData(
          Fake.respond(503, {}),
          Fake.respond(200, { allergies: [{ Substance: "Penicillin" }], success: true }),
          Fake.respond(200, { Success: false, ErrorType: "PersonNotFound", ErrorMessage: "Not found." })
        )
        const { items } = yield* Fake.runWithClock(PersonData.get(allergies, Fake.PERSON_UID))
        expect(items).toEqual([{ Substance: "Penicillin" }])
        const sent = (yield* fake.requests).filter((r) => r.path === "/api/clinical/allergy/get")
        expect(sent).toHaveLength(2)
        expect(JSON.parse(sent[0]!.body!)).toEqual({ personuid: Fake.PERSON_UID })
        expect(yield* Effect.flip(PersonData.get(allergies, Fake.PERSON_UID))).toEqual(
          new ClinicalError.ApiError({
            operation: "allergies",
            method: "POST",
            url: `${Fake.BASE_URL}/api/clinical/allergy/get`,
            status: 200,
            errorType: "PersonNotFound",
            errorMessage: "Not found."
          })
        )
      })
    ))

  it.effect("finds its collection as the only array field named like it, and refuses a body without it", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        yield* fake.scriptData(
          Fake.respond(200, { AllergyList: [{ Substance: "Latex" }], Notes: [], Success: true }),
          Fake.respond(200, { Success: true }),
          Fake.respond(200, { Allergies: null, Success: true })
        )
        expect((yield* PersonData.get(allergies, Fake.PERSON_UID)).items).toEqual([{ Substance: "Latex" }])
        const error = yield* Effect.flip(PersonData.get(allergies, Fake.PERSON_UID))
        expect(error).toMatchObject({ _tag: "ResponseDecodeError", operation: "allergies" })
        expect(error.message).toContain("no Allergies collection")
        expect((yield* PersonData.get(allergies, Fake.PERSON_UID)).items).toEqual([])
      })
    ))

  it.effect("the name a collection's variant must contain: its stem, not less (issue 24's mutation run)", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        // Each body has a decoy array whose name holds a shorter cut of the collection's name.
        const cases = [
          ["Medications", { MedicationList: [{ a: 1 }], Misc: [] }],
          ["Devices", { DeviceList: [{ a: 1 }], DeviationNotes: [] }],
          ["Allergies", { AllergyList: [{ a: 1 }], AllNotes: [] }],
          ["Udi", { UdiList: [{ a: 1 }], UdMap: [] }]
        ] as const
        for (const [collection, body] of cases) {
          yield* fake.scriptData(Fake.respond(200, { ...body, Success: true }))
          const op = PersonData.operation({ name: "variant", path: "/x", collection })
          expect((yield* PersonData.get(op, Fake.PERSON_UID)).items, collection).toEqual([{ a: 1 }])
        }
      })
    ))

  it.effect("a definition that cannot be used is refused with InvalidRequest naming the field, sending nothing", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        const NAME = "must be 1 to 64 letters, digits, '_', '.' or '-', starting with a letter"
        const COLLECTION = "must be the name of the payload collection"
        const bad: ReadonlyArray<readonly [PersonData.Operation, string, string | undefined]> = [
          [PersonData.operation({ name: "", path: "/x", collection: "X" }), "operation.name", NAME],
          [PersonData.operation({ name: "has space", path: "/x", collection: "X" }), "operation.name", NAME],
          [PersonData.operation({ name: "x", path: "x", collection: "X" }), "operation.path", undefined],
          [PersonData.operation({ name: "x", path: "/x?y=1", collection: "X" }), "operation.path", undefined],
          [PersonData.operation({ name: "x", path: "/x", collection: "" }), "operation.collection", COLLECTION],
          [
            PersonData.operation({ name: "x", path: "/x", collection: "C".repeat(129) }),
            "operation.collection",
            COLLECTION
          ],
          [PersonData.operation({ name: "x", path: "/x", collection: 5 as never }), "operation.collection", COLLECTION],
          [PersonData.operation(undefined as never), "operation.name", NAME],
          [undefined as never, "operation", "must be a PersonData.operation(...)"],
          [null as never, "operation", "must be a PersonData.operation(...)"]
        ]
        for (const [operation, field, reason] of bad) {
          const error = yield* Effect.flip(PersonData.get(operation, Fake.PERSON_UID))
          expect(error).toMatchObject({ _tag: "InvalidRequest", field, ...(reason === undefined ? {} : { reason }) })
        }
        expect(yield* fake.requests).toHaveLength(0)
        // A collection name of 128 characters is taken.
        yield* fake.scriptData(Fake.respond(200, { ["C".repeat(128)]: [], Success: true }))
        const longest = PersonData.operation({ name: "x", path: "/x", collection: "C".repeat(128) })
        expect((yield* PersonData.get(longest, Fake.PERSON_UID)).items).toEqual([])
      })
    ))

  it.effect("getAs refuses a schema that is not one", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(PersonData.getAs(allergies, {} as Schema.Schema<unknown>, Fake.PERSON_UID))
        expect(error).toMatchObject({ _tag: "InvalidRequest", operation: "allergies", field: "schema" })
        expect(yield* fake.requests).toHaveLength(0)
      })
    ))
})
