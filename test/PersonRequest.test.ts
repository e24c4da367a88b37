/**
 * The body of a request about one person, checked before anything is sent
 * (`internal/personRequest`): what is written, and each refusal by field and reason.
 */
import { describe, expect, it } from "@effect/vitest"
import { Either, Redacted } from "effect"
import * as Util from "node:util"
import { personRequest } from "../src/internal/call/personRequest.js"

const refusal = (result: ReturnType<typeof personRequest>) =>
  Either.isLeft(result) ? { field: result.left.field, reason: result.left.reason } : undefined

describe("personRequest", () => {
  it("writes personuid and the dates, and hands the PersonUid back redacted", () => {
    const request = personRequest("medications", "uid-1", { startDate: "2024-01-01", endDate: "2024-01-01" })
    if (Either.isLeft(request)) throw request.left
    expect(request.right.body.reveal()).toBe(
      `{"personuid":"uid-1","StartDate":"2024-01-01","EndDate":"2024-01-01"}`
    )
    expect(Redacted.isRedacted(request.right.personUid())).toBe(true)
    expect(Redacted.value(request.right.personUid())).toBe("uid-1")
    const given = Redacted.make("uid-2")
    const fromRedacted = personRequest("medications", given, undefined)
    expect(Either.isRight(fromRedacted) && fromRedacted.right.personUid()).toBe(given)
  })

  it("the body is secret: shown as <redacted> in every form, an Effect Redacted of it made once, when asked", () => {
    const request = personRequest("medications", "uid-1", undefined)
    if (Either.isLeft(request)) throw request.left
    const body = request.right.body
    for (
      const shown of [String(body), `${body}`, JSON.stringify({ body }), Util.inspect({ body }, { showHidden: true })]
    ) {
      expect(shown).not.toContain("uid-1")
      expect(shown).toContain("<redacted>")
    }
    const redacted = body.redacted()
    expect(Redacted.value(redacted)).toBe(`{"personuid":"uid-1"}`)
    expect(body.redacted()).toBe(redacted)
  })

  it("one date alone is fine, either one, and is the only one written", () => {
    const body = (dates: Parameters<typeof personRequest>[2]) => {
      const request = personRequest("medications", "uid", dates)
      return Either.isRight(request) ? request.right.body.reveal() : request.left.reason
    }
    expect(body({ startDate: "2024-05-01" })).toBe(`{"personuid":"uid","StartDate":"2024-05-01"}`)
    expect(body({ endDate: new Date(Date.UTC(2024, 4, 1, 23, 59)) })).toBe(`{"personuid":"uid","EndDate":"2024-05-01"}`)
    expect(body(null)).toBe(`{"personuid":"uid"}`)
    expect(body({})).toBe(`{"personuid":"uid"}`)
    expect(body(undefined)).toBe(`{"personuid":"uid"}`)
    // Quotes and backslashes are visible ASCII: escaped as JSON escapes them, with or without dates.
    const odd = `a"b\\c+/=`
    expect(body({ startDate: "2024-05-01" }).startsWith(`{"personuid":${JSON.stringify("uid")}`)).toBe(true)
    const request = personRequest("medications", odd, undefined)
    expect(Either.isRight(request) && request.right.body.reveal()).toBe(JSON.stringify({ personuid: odd }))
    const dated = personRequest("medications", odd, { endDate: "2024-05-01" })
    expect(Either.isRight(dated) && JSON.parse(dated.right.body.reveal())).toEqual({
      personuid: odd,
      EndDate: "2024-05-01"
    })
  })

  it("refuses, by field and reason", () => {
    expect(refusal(personRequest("medications", "uid", 5 as never))).toEqual({
      field: "options",
      reason: "must be an object such as { startDate, endDate }"
    })
    expect(refusal(personRequest("medications", "uid", { startDate: "2024-05-02", endDate: "2024-05-01" }))).toEqual({
      field: "startDate",
      reason: "is after endDate"
    })
    expect(refusal(personRequest("medications", "bad uid", undefined))?.field).toBe("personUid")
  })
})
