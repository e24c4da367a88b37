/**
 * `scrub` and the forms a real ASP.NET/IIS service could echo a secret in (issue 22): base64, nested
 * JSON, HTML entities, full case folding; and redaction by shape, which leaves what is not a secret's
 * shape readable, in time linear in the text.
 */
import { describe, expect, it } from "@effect/vitest"
import { MAX_SEARCHED, redactor, scrub } from "../src/internal/redaction/redaction.js"
import { exact, expectLinear, GUID, TOKEN } from "./support/redactionFixtures.js"

describe("scrub: forms a real ASP.NET/IIS service could echo (issue 22)", () => {
  const base64 = (text: string) => Buffer.from(text, "utf8").toString("base64")
  const base64url = (text: string) => Buffer.from(text, "utf8").toString("base64url")
  const jsonInJson = (text: string) =>
    JSON.stringify(JSON.stringify({ echo: text }).replace(/\//g, "\\/").replace(/\+/g, "\\u002B"))
  const html = (text: string) =>
    text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(
      /'/g,
      "&#39;"
    )
  const PASS_CODE = "Straße&<'x>7"

  const exactForms: ReadonlyArray<readonly [string, string, string, string?]> = [
    ["a token percent-encoded twice", TOKEN, encodeURIComponent(encodeURIComponent(TOKEN))],
    ["a token percent-encoded three times", TOKEN, encodeURIComponent(encodeURIComponent(encodeURIComponent(TOKEN)))],
    ["a token in JSON inside a JSON string", TOKEN, jsonInJson(TOKEN), `"{\\"echo\\":\\"<redacted>\\"}"`],
    [
      "a PersonUid in JSON inside a JSON string",
      "Qk9C/x+y==",
      jsonInJson("Qk9C/x+y=="),
      `"{\\"echo\\":\\"<redacted>\\"}"`
    ],
    ["a pass code upper-cased with its ß as SS", PASS_CODE, PASS_CODE.toUpperCase()],
    ["a pass code HTML-escaped", PASS_CODE, html(PASS_CODE)],
    ["a pass code XML-escaped (&apos;)", PASS_CODE, html(PASS_CODE).replace("&#39;", "&apos;")],
    [
      "a token with its = and + as XML numeric references",
      TOKEN,
      TOKEN.replace(/=/g, "&#x3D;").replace(/\+/g, "&#43;")
    ],
    ["a token with named HTML5 references", TOKEN, TOKEN.replace(/\+/g, "&plus;").replace(/\//g, "&sol;")],
    ["an HTML-escaped pass code, percent-encoded", PASS_CODE, encodeURIComponent(html(PASS_CODE))],
    [
      "a GUID in braces percent-encoded twice",
      GUID,
      encodeURIComponent(encodeURIComponent(`{${GUID}}`)),
      "%257B<redacted>%257D"
    ]
  ]
  for (const [title, secret, echoed, expected = "<redacted>"] of exactForms) {
    it(`the exact search finds ${title}`, () => {
      expect(scrub(`before ${echoed} after`, [secret], exact)).toBe(`before ${expected} after`)
    })
  }

  it("a secret with hyphens is found without them too, or with other separators (a service may normalise a pass code)", () => {
    for (const echoed of ["EW2719KQ", "ew-2719kq", "EW 2719 KQ", "EW\u20132719\u2013KQ", "EW+2719+KQ"]) {
      expect(scrub(`code ${echoed} refused`, ["EW-2719-KQ"], exact), echoed).toBe("code <redacted> refused")
    }
  })

  it("a secret encoded alone in base64 or base64url, padded or not, is found however short its encoding", () => {
    for (const echoed of ["RVctMjcxOS1LUQ==", "RVctMjcxOS1LUQ", "MDMvMTQvMTk0NQ=="]) {
      expect(scrub(`x ${echoed} y`, ["EW-2719-KQ", "03/14/1945"], exact), echoed).toBe("x <redacted> y")
    }
    const token = "ab+/c?d>e~"
    expect(scrub(`x ${Buffer.from(token).toString("base64url")} y`, [token], exact)).toBe("x <redacted> y")
    // A secret of a few bytes has no base64 form looked for: it would be found in any text.
    expect(scrub("x Zm9v y", ["foo"], exact)).toBe("x Zm9v y")
  })

  it("decodes at most four rounds deep: a fifth encoding is no form of the secret (and costs no more)", () => {
    let echoed = "se-cret/x+y"
    for (let round = 0; round < 5; round++) echoed = encodeURIComponent(echoed)
    expect(scrub(`a ${echoed} b`, ["se-cret/x+y"], exact)).toBe(`a ${echoed} b`)
  })

  it("ß in a secret and SS, ss or ẞ in the text are one and the same (full case folding)", () => {
    for (const echoed of ["STRASSE-12", "strasse-12", "straẞe-12", "STRAẞE-12"]) {
      expect(scrub(`x ${echoed} y`, ["straße-12"], exact), echoed).toBe("x <redacted> y")
    }
    expect(scrub("x straße-12 y", ["STRASSE-12"], exact)).toBe("x <redacted> y")
  })

  it("what only looks like an entity is text like any other: nothing decodes to a character it does not stand for", () => {
    // A misreading would make "[&]" or "[\u0000]" of these, which the text does not hold as written.
    for (const text of ["&amp", "&#;", "&#x;", "&#xZZ;", "&unknown;", "&#99999999;", "& amp;", "&#x110000;", "&AmP;"]) {
      expect(scrub(`[${text}]`, ["[&]", "[\u0000]"], exact), text).toBe(`[${text}]`)
    }
    expect(scrub("[&amp;]", ["[&]"], exact)).toBe("<redacted>")
    expect(scrub("[&#0;]", ["[\u0000]"], exact)).toBe("<redacted>")
  })

  const shapeForms: ReadonlyArray<readonly [string, string, string?]> = [
    ["base64 of the token", base64(TOKEN)],
    ["URL-safe base64 of the token", base64url(TOKEN)],
    ["base64 of the ApplicationId", base64(GUID)],
    ["base64 of the ApplicationId's 16 bytes", Buffer.from(GUID.replace(/-/g, ""), "hex").toString("base64")],
    ["base64 of a data request body", base64(JSON.stringify({ personuid: "Qk9CL3BlcnNvbi91aWQrKz09/x+y==" }))],
    [
      "base64 of an authenticate body",
      base64(JSON.stringify({ ApplicationId: GUID, PassCode: "EW-2719-KQ", DateOfBirth: "01/31/1970" }))
    ],
    ["base64 of the token, percent-encoded", encodeURIComponent(base64(TOKEN))],
    ["base64 of the token, JSON-escaped", base64(TOKEN).replace(/\//g, "\\/").replace(/\+/g, "\\u002B")],
    ["any GUID", "6f3a9c2e-1b4d-4e8f-9a0b-1c2d3e4f5a6b"],
    ["any GUID in braces", "{6F3A9C2E-1B4D-4E8F-9A0B-1C2D3E4F5A6B}"],
    ["any 32 hex digits", "6f3a9c2e1b4d4e8f9a0b1c2d3e4f5a6b"],
    ["a date as .NET's JSON writes it", "/Date(2649600000)/"],
    ["a date as .NET's JSON writes it, escaped", "\\/Date(-2649600000+0100)\\/"],
    ["a date day first", "31/01/1970"],
    ["a date month first", "01/31/1970"],
    ["a date with dots", "31.01.1970"],
    ["a date, ISO", "1970-01-31"],
    ["a date, ISO with its time", "1970-01-31T00:00:00", "<redacted>T00:00:00"],
    ["a date as .NET prints it", "1/31/1970 12:00:00 AM", "<redacted> 12:00:00 AM"],
    ["a date in words", "Saturday, January 31, 1970"],
    ["a date in words, day first", "31 January 1970"],
    ["a date, abbreviated", "31-Jan-1970"],
    ["a date as eight digits", "19700131"],
    ["a date percent-encoded", encodeURIComponent("01/31/1970")],
    ["a date as milliseconds since 1970", "-783302400000"],
    ["a date as seconds since 1970", "-783302400"],
    ["a date as eight digits, month first", "03141945"],
    ["a date as eight digits, day first", "14031945"],
    ["a date as East Asian cultures write it", "1945年3月14日"],
    ["the first 16 characters of a token", "Qk9CL3BlcnNvbi91"]
  ]
  for (const [title, echoed, expected = "<redacted>"] of shapeForms) {
    it(`redacted by shape: ${title}`, () => {
      expect(scrub(`Error: ${echoed} refused`, [])).toBe(`Error: ${expected} refused`)
      // The exact search alone knows nothing of these: the shape is what finds them.
      expect(scrub(`Error: ${echoed} refused`, [], exact)).toBe(`Error: ${echoed} refused`)
    })
  }

  it("what is not a secret's shape stays readable: words, identifiers, paths, addresses, versions, statuses", () => {
    const kept = [
      "PersonNotFound",
      "INVALID_APPLICATION_IDENTIFIER",
      "System.NullReferenceException: Object reference not set to an instance of an object.",
      "No HTTP resource was found that matches the request URI 'https://openapi.intelichart.com/api/clinical/medication/get'.",
      "connect ECONNREFUSED 10.10.10.10:443",
      "version 1.2.3, HTTP 503, 12:00:00",
      "an-ordinary-hyphenated-phrase-of-words"
    ]
    for (const text of kept) expect(scrub(text, []), text).toBe(text)
  })

  it("a person's items are not redacted by shape: their dates and codes are the data", () => {
    expect(redactor(["unrelated"])("started 1970-01-31, code 6f3a9c2e-1b4d-4e8f-9a0b-1c2d3e4f5a6b"))
      .toBe("started 1970-01-31, code 6f3a9c2e-1b4d-4e8f-9a0b-1c2d3e4f5a6b")
  })

  it("redaction by shape costs time linear in the text, whatever it holds", () => {
    const texts = [
      "January ".repeat(MAX_SEARCHED / 8),
      "1/".repeat(MAX_SEARCHED / 2),
      "a".repeat(MAX_SEARCHED - 1) + "!",
      "/Date(".repeat(MAX_SEARCHED / 6),
      "%25".repeat(MAX_SEARCHED / 3),
      "&amp;".repeat(MAX_SEARCHED / 5)
    ]
    for (const text of texts) expectLinear(() => scrub(text, [TOKEN, GUID]), text.slice(0, 20))
  })
})
