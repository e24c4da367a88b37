/**
 * The person calls' decisions in the core, tested directly (no fibers): a request's body and its
 * refusals (core/call/personRequest), the credentials and the answer of authenticate
 * (core/call/authenticate), and the definitions and answers of the person-data operations
 * (core/call/personData). Each refusal's field and reason, word for word. And the Effect 3 line's
 * `dateRange`, which the command line and the queue check a batch's range with.
 */
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as Authenticate from "../core/call/authenticate.js"
import * as PersonData from "../core/call/personData.js"
import * as PersonRequest from "../core/call/personRequest.js"
import { dateRange } from "../src/internal/call/personRequest.js"

const { Refusal } = PersonRequest

describe("core/call/personRequest", () => {
  it("writes the body: no range directly, a range as JSON.stringify writes it, the PersonUid as checked", () => {
    const plain = PersonRequest.personRequest("uid-1", undefined)
    expect(plain).toEqual(new PersonRequest.PersonBody(`{"personuid":"uid-1"}`, "uid-1"))
    const odd = `a"b\\c+/=`
    expect(PersonRequest.personRequest(odd, null)).toEqual(
      new PersonRequest.PersonBody(JSON.stringify({ personuid: odd }), odd)
    )
    expect(PersonRequest.personRequest("u", { startDate: "2024-01-01", endDate: new Date(Date.UTC(2024, 0, 2, 23)) }))
      .toEqual(new PersonRequest.PersonBody(`{"personuid":"u","StartDate":"2024-01-01","EndDate":"2024-01-02"}`, "u"))
    expect(PersonRequest.personRequest("u", { endDate: "2024-05-01" }))
      .toEqual(new PersonRequest.PersonBody(`{"personuid":"u","EndDate":"2024-05-01"}`, "u"))
  })

  it("refuses the PersonUid first, then the options, then the range: by field and reason", () => {
    const refused = (uid: unknown, dates?: unknown) =>
      PersonRequest.personRequest(uid, dates as PersonRequest.DateRange | undefined)
    expect(refused(5, 5)).toEqual(new Refusal("personUid", "must be a string"))
    expect(refused(" ")).toEqual(new Refusal("personUid", "is empty"))
    expect(refused("x".repeat(2049))).toEqual(new Refusal("personUid", "is longer than 2048 characters"))
    expect(refused("x".repeat(2048))).toBeInstanceOf(PersonRequest.PersonBody)
    expect(refused("a b")).toEqual(
      new Refusal(
        "personUid",
        "contains characters that are not visible ASCII (control characters, spaces or non-ASCII)"
      )
    )
    expect(refused("u", "2024-01-01")).toEqual(
      new Refusal("options", "must be an object such as { startDate, endDate }")
    )
    expect(refused("u", { startDate: "2024-13-01", endDate: "x" })).toEqual(
      new Refusal("startDate", "is not a real calendar date")
    )
    expect(refused("u", { endDate: "01/02/2024" })).toEqual(
      new Refusal("endDate", "must be written as a YYYY-MM-DD string")
    )
    expect(refused("u", { startDate: "2024-05-02", endDate: "2024-05-01" })).toEqual(
      new Refusal("startDate", "is after endDate")
    )
  })

  it("dateRange: one shared object for no range, the written range, or the refused field", () => {
    expect(PersonRequest.dateRange(undefined)).toBe(PersonRequest.NO_DATES)
    expect(PersonRequest.dateRange(null)).toBe(PersonRequest.NO_DATES)
    expect(PersonRequest.dateRange({})).toBe(PersonRequest.NO_DATES)
    expect(PersonRequest.dateRange({ startDate: undefined, endDate: undefined })).toBe(PersonRequest.NO_DATES)
    expect(PersonRequest.NO_DATES).toEqual({})
    expect(PersonRequest.dateRange({ startDate: "2024-05-01", endDate: "2024-05-01" })).toEqual({
      StartDate: "2024-05-01",
      EndDate: "2024-05-01"
    })
    expect(PersonRequest.dateRange({ startDate: new Date(Number.NaN) })).toEqual(
      new Refusal("startDate", "is an invalid Date")
    )
  })
})

describe("the Effect 3 line's dateRange (the command line's and the queue's check)", () => {
  it("the core's range as an Either: the written range, or the refused field and why", () => {
    expect(dateRange(undefined)).toEqual(Either.right({}))
    expect(dateRange({ endDate: "2024-05-01" })).toEqual(Either.right({ EndDate: "2024-05-01" }))
    expect(dateRange({ startDate: "2024-05-02", endDate: "2024-05-01" })).toEqual(
      Either.left(["startDate", "is after endDate"])
    )
  })
})

describe("core/call/authenticate", () => {
  const noon = Date.UTC(2024, 0, 1, 12)
  const check = (credentials: unknown, now = noon, format = "MM/DD/YYYY") =>
    Authenticate.check(credentials, (value) => value, format, now)

  it("checks the credentials: the pass code as given, the date of birth as the format writes it, its echoed forms", () => {
    expect(check({ passCode: "pass code é", dateOfBirth: "1945-01-09" })).toEqual({
      passCode: "pass code é",
      dateOfBirth: "01/09/1945",
      dateForms: ["01/09/1945", "1945-01-09", "1/9/1945"]
    })
    expect(check({ passCode: "p", dateOfBirth: "01/09/1945" }, noon, "YYYY.DD.MM")).toMatchObject({
      dateOfBirth: "1945.09.01"
    })
    expect(check({ passCode: "p", dateOfBirth: new Date(Date.UTC(1945, 0, 9, 23)) })).toMatchObject({
      dateOfBirth: "01/09/1945"
    })
  })

  it("refuses, in order, by field and reason", () => {
    const reason = "must be an object with passCode and dateOfBirth"
    expect(check(null)).toEqual(new Refusal("credentials", reason))
    expect(check("p")).toEqual(new Refusal("credentials", reason))
    expect(check({ passCode: 1, dateOfBirth: 1 })).toEqual(new Refusal("passCode", "must be a string"))
    expect(check({ passCode: " ", dateOfBirth: 1 })).toEqual(new Refusal("passCode", "is empty"))
    expect(check({ passCode: "p".repeat(257), dateOfBirth: 1 })).toEqual(
      new Refusal("passCode", "is longer than 256 characters")
    )
    expect(check({ passCode: "a\u200bb", dateOfBirth: 1 })).toEqual(
      new Refusal(
        "passCode",
        "contains characters that are not printable (control characters, line breaks or invisible ones)"
      )
    )
    expect(check({ passCode: "p", dateOfBirth: 1 })).toEqual(
      new Refusal("dateOfBirth", "must be a YYYY-MM-DD or MM/DD/YYYY string or a Date")
    )
    expect(check({ passCode: "p", dateOfBirth: "1945-02-30" })).toEqual(
      new Refusal("dateOfBirth", "is not a real calendar date")
    )
  })

  it("reads each secret only once the one before is accepted", () => {
    const read: Array<unknown> = []
    const reveal = (value: unknown) => (read.push(value), value)
    Authenticate.check({ passCode: "", dateOfBirth: "1945-01-09" }, reveal, "MM/DD/YYYY", noon)
    expect(read).toEqual([""])
  })

  it("a date of birth is in the future only past today in the furthest timezone (UTC+14)", () => {
    const at = (dateOfBirth: string, now: number) => check({ passCode: "p", dateOfBirth }, now)
    const future = new Refusal("dateOfBirth", "is in the future")
    // 10:00 UTC is midnight of the next day at UTC+14.
    expect(at("2024-01-02", Date.UTC(2024, 0, 1, 10))).not.toBeInstanceOf(Refusal)
    expect(at("2024-01-03", Date.UTC(2024, 0, 1, 10))).toEqual(future)
    expect(at("2024-01-02", Date.UTC(2024, 0, 1, 9, 59, 59, 999))).toEqual(future)
    expect(at("2024-01-01", Date.UTC(2024, 0, 1, 9, 59, 59, 999))).not.toBeInstanceOf(Refusal)
  })

  it("writes the body with the ApplicationId, the pass code and the date of birth", () => {
    const checked = check({ passCode: `p"q`, dateOfBirth: "1945-01-09" })
    if (checked instanceof Refusal) throw new Error(checked.reason)
    expect(Authenticate.body("app-id", checked)).toBe(
      `{"ApplicationId":"app-id","PassCode":"p\\"q","DateOfBirth":"01/09/1945"}`
    )
  })

  it("reads the PersonUid in any letter case, in the envelope or bare; says why not, never echoing it", () => {
    expect(Authenticate.personUidOf({ Success: true, PersonUid: "uid-1" })).toEqual({ ok: true, value: "uid-1" })
    expect(Authenticate.personUidOf({ personuid: "uid-2" })).toEqual({ ok: true, value: "uid-2" })
    const not = (reason: string) => ({ ok: false, reason })
    expect(Authenticate.personUidOf([{ PersonUid: "u" }])).toEqual(not("the body is not a JSON object"))
    expect(Authenticate.personUidOf("u")).toEqual(not("the body is not a JSON object"))
    expect(Authenticate.personUidOf({})).toEqual(not("the body has no PersonUid"))
    expect(Authenticate.personUidOf({ PersonUid: null })).toEqual(not("the body has no PersonUid"))
    const unusable = not("PersonUid is not a usable identifier (visible ASCII, at most 2048 characters)")
    for (const uid of [5, "", "a b", "é", "x".repeat(2049)]) {
      expect(Authenticate.personUidOf({ PersonUid: uid })).toEqual(unusable)
    }
  })
})

describe("core/call/personData", () => {
  const op = PersonData.medications

  it("a definition normalised: writes only when true; the documented operations", () => {
    expect(PersonData.operation({ name: "a", path: "/p", collection: "C", writes: "yes" as never })).toEqual({
      name: "a",
      path: "/p",
      collection: "C",
      writes: false
    })
    expect(PersonData.operation({ name: "a", path: "/p", collection: "C", writes: true }).writes).toBe(true)
    expect(PersonData.operation(undefined as never)).toEqual({
      name: undefined,
      path: undefined,
      collection: undefined,
      writes: false
    })
    expect([
      PersonData.medications,
      PersonData.ethnicities,
      PersonData.detailedEthnicities,
      PersonData.uniqueDeviceIdentifiers
    ])
      .toEqual([
        { name: "medications", path: "/api/clinical/medication/get", collection: "Medications", writes: false },
        { name: "ethnicities", path: "/api/Demographics/ethnicity/get", collection: "Ethnicities", writes: false },
        {
          name: "detailedEthnicities",
          path: "/api/Demographics/detailedethnicity/get",
          collection: "Ethnicities",
          writes: false
        },
        {
          name: "uniqueDeviceIdentifiers",
          path: "/api/Clinical/UniqueDeviceIdentifier/Get",
          collection: "UniqueDeviceIdentifier",
          writes: false
        }
      ])
  })

  it("refuses a definition by field and reason, in order", () => {
    const refusal = (definition: unknown) => PersonData.refusal(definition as PersonData.Operation)
    const name = "must be 1 to 64 letters, digits, '_', '.' or '-', starting with a letter"
    expect(refusal(null)).toEqual(new Refusal("operation", "must be a PersonData.operation(...)"))
    expect(refusal("medications")).toEqual(new Refusal("operation", "must be a PersonData.operation(...)"))
    expect(refusal({ name: "1a", path: "x" })).toEqual(new Refusal("operation.name", name))
    expect(refusal({ name: "a".repeat(65) })).toEqual(new Refusal("operation.name", name))
    expect(refusal({ name: "a", path: "x" })).toEqual(new Refusal("operation.path", "must start with /"))
    expect(refusal({ name: "a", path: "/p?q=1" })).toEqual(
      new Refusal("operation.path", "must be a plain path (visible ASCII, no query or fragment)")
    )
    const collection = new Refusal("operation.collection", "must be the name of the payload collection")
    for (const value of [undefined, "", "c".repeat(129)]) {
      expect(refusal({ name: "a", path: "/p", collection: value })).toEqual(collection)
    }
    expect(refusal({ name: "a", path: "/p", collection: "c".repeat(128) })).toBeUndefined()
    expect(refusal(op)).toBeUndefined()
  })

  it("a collection's stem: what a variant name contains", () => {
    expect(PersonData.stemOf("Medications")).toBe("medication")
    expect(PersonData.stemOf("Ethnicities")).toBe("ethnicit")
    expect(PersonData.stemOf("UniqueDeviceIdentifier")).toBe("uniquedeviceidentifier")
  })

  it("finds the collection: the body's own array, by name in any letter case, by stem when only one", () => {
    const list = [{ Name: "a" }]
    expect(PersonData.collectionOf(op, list)).toBe(list)
    expect(PersonData.collectionOf(op, { Success: true, Medications: list })).toBe(list)
    expect(PersonData.collectionOf(op, { medications: list })).toBe(list)
    expect(PersonData.collectionOf(op, { MEDICATIONS: list })).toBe(list)
    expect(PersonData.collectionOf(op, { Medications: null })).toEqual([])
    expect(PersonData.collectionOf(op, { MedicationList: list, Count: [1] })).toBe(list)
    // The named field wins over variants.
    expect(PersonData.collectionOf(op, { MedicationList: [], Medications: list })).toBe(list)
  })

  it("says why a body has no readable collection", () => {
    const unreadable = (json: unknown) => {
      const found = PersonData.collectionOf(op, json)
      return found instanceof PersonData.Unreadable ? found.reason : found
    }
    expect(unreadable("text")).toBe("the body is neither a JSON object nor an array")
    expect(unreadable(null)).toBe("the body is neither a JSON object nor an array")
    expect(unreadable({ Medications: {} })).toBe("Medications is not an array")
    expect(unreadable({ Medications: "none" })).toBe("Medications is not an array")
    expect(unreadable({ Items: [] })).toBe("the body has no Medications collection")
    expect(unreadable({ MedicationList: {} })).toBe("the body has no Medications collection")
    expect(unreadable({ CurrentMedications: [], PastMedications: [] })).toBe(
      "the body has 2 arrays named like Medications and none exactly: which holds it is unclear"
    )
  })

  it("keeps items whole: the array itself when every item is an object, else the first that is not", () => {
    const items = [{ a: 1 }, {}]
    expect(PersonData.keepWhole(op, items)).toBe(items)
    expect(PersonData.keepWhole(op, [])).toEqual([])
    expect(PersonData.keepWhole(op, [{}, [], 1])).toEqual(
      new PersonData.Unreadable("Medications[1] has the wrong type")
    )
    expect(PersonData.keepWhole(op, [null])).toEqual(new PersonData.Unreadable("Medications[0] has the wrong type"))
  })
})
