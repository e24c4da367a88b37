import { describe, expect, it } from "@effect/vitest"
import { Option } from "effect"
import { HttpDate } from "effect-clinical"
import { MockClinicalServer } from "effect-clinical/testing"

const EXPECTED = Date.UTC(1994, 10, 6, 8, 49, 37)
const NOW = Date.UTC(2026, 10, 22)

describe("HttpDate.parse", () => {
  it("reads the three forms of RFC 9110 section 5.6.7 as the same GMT instant", () => {
    for (
      const text of [
        "Sun, 06 Nov 1994 08:49:37 GMT",
        "Sunday, 06-Nov-94 08:49:37 GMT",
        "Sun Nov  6 08:49:37 1994",
        "Sun Nov 06 08:49:37 1994",
        "  Sun, 06 Nov 1994 08:49:37 GMT  "
      ]
    ) {
      expect(HttpDate.parseMillis(text, { now: NOW })).toEqual(Option.some(EXPECTED))
    }
  })

  it("reads asctime as GMT, not as local time", () => {
    expect(HttpDate.parseMillis("Thu Jan  1 00:00:00 1970")).toEqual(Option.some(0))
  })

  it("reads RFC 850 two-digit years as the most recent past year when they would be over 50 years ahead", () => {
    const year = (text: string) => Option.map(HttpDate.parse(text, { now: NOW }), (d) => d.getUTCFullYear())
    expect(year("Monday, 22-Nov-76 00:00:00 GMT")).toEqual(Option.some(2076))
    expect(year("Tuesday, 22-Nov-77 00:00:00 GMT")).toEqual(Option.some(1977))
    expect(year("Sunday, 22-Nov-26 00:00:00 GMT")).toEqual(Option.some(2026))
  })

  it("accepts a leap second and the last day of a leap February", () => {
    expect(HttpDate.parseMillis("Sat, 31 Dec 2016 23:59:60 GMT")).toEqual(Option.some(Date.UTC(2017, 0, 1)))
    expect(HttpDate.parseMillis("Thu, 29 Feb 2024 12:00:00 GMT")).toEqual(Option.some(Date.UTC(2024, 1, 29, 12)))
  })

  it("rejects everything that is not exactly one of the forms", () => {
    for (
      const text of [
        "",
        "now",
        "2026-11-22T08:00:00Z",
        "1732262400",
        "Sun, 06 Nov 1994 08:49:37",
        "Sun, 06 Nov 1994 08:49:37 UTC",
        "Sun, 06 Nov 1994 08:49:37 +0000",
        "Sun, 6 Nov 1994 08:49:37 GMT",
        "sun, 06 nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 94 08:49:37 GMT",
        "Sun, 32 Oct 1994 08:49:37 GMT",
        "Tue, 30 Feb 2024 08:49:37 GMT",
        "Fri, 29 Feb 2023 08:49:37 GMT",
        "Sun, 06 Nov 1994 24:00:00 GMT",
        "Sun, 06 Nov 1994 08:60:00 GMT",
        "Sun, 06 Nov 1994 08:49:61 GMT",
        "Sun, 00 Nov 1994 08:49:37 GMT",
        "Sun, 06 Foo 1994 08:49:37 GMT",
        "Sunday, 06-Nov-1994 08:49:37 GMT",
        "Sun, 06-Nov-94 08:49:37 GMT",
        "Sun Nov  6 08:49:37 1994 GMT",
        "Sun Nov 6 08:49:37 1994",
        "Sun Nov  0 08:49:37 1994",
        "Sun, 06 Nov 1994 08:49:37 GMT\r\nX: y",
        "Sun, 06 Nov 1994 08:49:37 GMT".repeat(3)
      ]
    ) {
      expect(HttpDate.parse(text), text).toEqual(Option.none())
    }
  })

  it("never throws, whatever it is given", () => {
    for (const value of [undefined, null, 42, {}, [], Symbol.iterator]) {
      expect(HttpDate.parse(value as unknown as string)).toEqual(Option.none())
    }
  })
})

describe("HttpDate.format", () => {
  it("writes IMF-fixdate, the form servers send", () => {
    expect(HttpDate.format(EXPECTED)).toBe("Sun, 06 Nov 1994 08:49:37 GMT")
    expect(HttpDate.format(new Date(Date.UTC(2026, 0, 1, 0, 0, 0, 999)))).toBe("Thu, 01 Jan 2026 00:00:00 GMT")
  })

  it("round-trips through parse, to the second", () => {
    for (const millis of [0, EXPECTED, NOW, Date.UTC(2099, 11, 31, 23, 59, 59), Date.UTC(2024, 1, 29)]) {
      expect(HttpDate.parseMillis(HttpDate.format(millis))).toEqual(Option.some(millis))
    }
  })

  it("throws a RangeError for an instant with no HTTP date", () => {
    expect(() => HttpDate.format(new Date(Number.NaN))).toThrow(RangeError)
    expect(() => HttpDate.format(Date.UTC(10000, 0, 1))).toThrow(RangeError)
  })
})

describe("options under exactOptionalPropertyTypes", () => {
  it("ParseOptions.now and Fault.status's retryAfter accept an explicit undefined", () => {
    const now: number | undefined = undefined
    expect(HttpDate.parse("Sunday, 06-Nov-94 08:49:37 GMT", { now })._tag).toBe("Some")
    const retryAfter: number | undefined = undefined
    expect(MockClinicalServer.Fault.status(503, { retryAfter })).toEqual({
      _tag: "Status",
      status: 503,
      body: JSON.stringify({ Message: "Injected fault: HTTP 503." })
    })
  })
})
