/**
 * `scrub` and each way a character of a secret may be written: JSON escapes, percent-encoding, both at
 * once, letter cases, and what only looks like an escape; the escapes around a secret found by fuzzing.
 */
import { describe, expect, it } from "@effect/vitest"
import { scrub, scrubber } from "../src/internal/redaction/redaction.js"
import { exact, redactEvery } from "./support/redactionFixtures.js"

describe("scrub: each way a character of a secret may be written", () => {
  const cases: ReadonlyArray<readonly [string, string, string]> = [
    ["a non-ASCII character as a JSON \\u escape", "café-secret-1", "caf\\u00e9-secret-1"],
    ["a non-ASCII character percent-encoded", "café-secret-1", "caf%C3%A9-secret-1"],
    ["a slash JSON-escaped", "a/b-secret-12", "a\\/b-secret-12"],
    ["a quote JSON-escaped", `a"b-secret-12`, `a\\"b-secret-12`],
    ["a backslash JSON-escaped", "a\\b-secret-12", "a\\\\b-secret-12"],
    ["a space form-encoded", "a b-secret-12", "a+b-secret-12"],
    ["a character outside the BMP as a JSON surrogate pair", "key\u{1F511}-secret-1", "key\\ud83d\\udd11-secret-1"],
    ["a character outside the BMP percent-encoded", "key\u{1F511}-secret-1", "key%F0%9F%94%91-secret-1"],
    ["a non-ASCII letter in another case", "CAFÉ-secret-1", "café-secret-1"],
    ["a non-ASCII letter in another case, the other way", "café-secret-1", "CAFÉ-SECRET-1"],
    ["a JSON \\u escape with upper-case hex digits", "café-secret-1", "caf\\u00E9-secret-1"],
    ["a \\U escape (some serializers)", "café-secret-1", "caf\\U00e9-secret-1"],
    ["percent-encoded with lower-case hex digits", "café-secret-1", "caf%c3%a9-secret-1"],
    ["a NUL as a JSON escape", "nul\u0000-secret-1", "nul\\u0000-secret-1"],
    ["a NUL percent-encoded", "nul\u0000-secret-1", "nul%00-secret-1"],
    ["U+0080, the first of two UTF-8 bytes", "edge\u0080-secret-1", "edge%C2%80-secret-1"],
    ["U+07FF, the last of two UTF-8 bytes", "edge\u07FF-secret-1", "edge%DF%BF-secret-1"],
    ["U+0800, the first of three UTF-8 bytes", "edge\u0800-secret-1", "edge%E0%A0%80-secret-1"],
    ["U+FFFF, the last of three UTF-8 bytes", "edge\uFFFF-secret-1", "edge%EF%BF%BF-secret-1"],
    ["U+10000, the first of four UTF-8 bytes", "edge\u{10000}-secret-1", "edge%F0%90%80%80-secret-1"],
    ["U+10FFFF, the last of four UTF-8 bytes", "edge\u{10FFFF}-secret-1", "edge%F4%8F%BF%BF-secret-1"],
    ["a Z in another case", "ZIP-secret-1", "zip-SECRET-1"],
    ["\\u escapes with a and A among their digits", "copy\u00a9\u00A9-secret-1", "copy\\u00a9\\u00A9-secret-1"],
    ["a line feed percent-encoded, its hex in either case", "line\nfeed\n-secret-1", "line%0afeed%0A-secret-1"],
    ["a percent escape just before a % that starts none", "lit/%zz-secret-1", "lit%2F%zz-secret-1"],
    ["a two-byte escape just before a % that starts none", "café%zz-secret-1", "caf%C3%A9%zz-secret-1"]
  ]
  for (const [name, secret, echoed] of cases) {
    it(name, () => {
      expect(scrub(`before ${echoed} after`, [secret])).toBe("before <redacted> after")
    })
  }

  it("an escaped last or first character is replaced whole, escape included", () => {
    expect(scrub("x secret-token\\/ y", ["secret-token/"])).toBe("x <redacted> y")
    expect(scrub("x \\/secret-token y", ["/secret-token"])).toBe("x <redacted> y")
    expect(scrub("x secret-token\\u002B y", ["secret-token+"])).toBe("x <redacted> y")
    expect(scrub("x secret-token%F0%9F%94%91 y", ["secret-token\u{1F511}"])).toBe("x <redacted> y")
    expect(scrub("x secret-token%2F y", ["secret-token/"])).toBe("x <redacted> y")
  })

  it("what only looks like an escape is text like any other, and is not decoded", () => {
    // Each of these, echoed as it is, is found as it is.
    const literal = [
      "lit%zz-secret-1", // not hexadecimal
      "lit%C0%80-secret-1", // an overlong NUL
      "lit%80-secret-1", // a continuation byte alone
      "lit%C3x-secret-1", // a sequence cut short
      "lit%ED%A0%80-secret-1", // a surrogate
      "lit%F4%90%80%80-secret-1", // past U+10FFFF
      "lit%F8%80%80%80-secret-1", // no such lead byte
      "lit\\u12zz-secret-1", // \u without four hexadecimal digits
      "lit\\u00:A-secret-1", // nor these
      "lit\\b1234-secret-1", // a backslash before another letter
      "lit-secret-1\\u00" // an escape cut by the end
    ]
    for (const secret of literal) expect(scrub(`x ${secret} y`, [secret])).toBe("x <redacted> y")
    // An escape cut short by the very end of the text, a \u or a %, is text too.
    expect(scrub("x lit-secret-1\\u00", ["lit-secret-1\\u00"])).toBe("x <redacted>")
    expect(scrub("x lit-secret-1%C", ["lit-secret-1%C"])).toBe("x <redacted>")
    // ... and none of them stands for a character.
    expect(scrub("x%C0%80y", ["x\u0000y"])).toBe("x%C0%80y")
    expect(scrub("x%80y", ["x\u0080y"])).toBe("x%80y")
    expect(scrub("x%ED%A0%80y", ["x\ud800y"])).toBe("x%ED%A0%80y")
    expect(scrub("x\\b1234y", ["x\u1234y"])).toBe("x\\b1234y")
  })

  it("a secret whose start repeats inside it is found wherever a search would have to fall back", () => {
    expect(scrub("xaaab", ["aab"])).toBe("xa<redacted>")
    expect(scrub("aabaabaaab-end", ["aabaaab"])).toBe("aab<redacted>-end")
    expect(scrub("ababab", ["abab"])).toBe("<redacted>")
    expect(scrub("abacabab", ["abab"])).toBe("abac<redacted>")
    // ... and nowhere else: what follows a secret is not taken for more of it.
    expect(scrub("bbaba", ["bba"])).toBe("<redacted>ba")
    expect(scrub("abbb", ["abb"])).toBe("<redacted>b")
    // ... and nowhere else: what follows a secret is not taken for more of it.
    expect(scrub("bbaba", ["bba"])).toBe("<redacted>ba")
    expect(scrub("abbb", ["abb"])).toBe("<redacted>b")
  })

  it("a secret that itself holds what looks like an escape is found as it is written (from review)", () => {
    // A PersonUid may be any visible ASCII: URL-encoded base64, say.
    for (const secret of ["p%41ss", "q1w2%2Be3r4%2Fz%3D%3D", "ab\\", "a\\\\b", "x\\u0041y"]) {
      expect(scrub(`token "${secret}" rejected`, [secret])).toBe(`token "<redacted>" rejected`)
    }
    // ... and found encoded once more, as a URL or JSON would write it.
    expect(scrub("x q1w2%252Be3r4 y", ["q1w2%2Be3r4"])).toBe("x <redacted> y")
  })

  it("a secret just after a % is found, even when the % and its first characters look like an escape (from review)", () => {
    const guid = "6f3a9c2e-1b4d-4e8f-9a0b-1c2d3e4f5a6b"
    expect(scrub(`WHERE uid LIKE '%${guid}%'`, [guid], exact)).toBe("WHERE uid LIKE '%<redacted>%'")
    expect(scrub(`WHERE uid LIKE '%${guid.toUpperCase()}%'`, [guid], exact)).toBe("WHERE uid LIKE '%<redacted>%'")
    // A % that can take the secret's first characters for an escape goes with it (the safe side).
    expect(scrub("x %41bcdef-secret y", ["41bcdef-secret"])).toBe("x <redacted> y")
  })

  it("letters whose cases do not map one to one are matched as a case-insensitive search matches them (from review)", () => {
    expect(scrub("token οδος", ["ΟΔΟΣ"])).toBe("token <redacted>")
    expect(scrub("dose 5ΜG", ["5µg"])).toBe("dose <redacted>")
    expect(scrub("x ΒETA", ["ϐeta"])).toBe("x <redacted>")
    // Letters that fold alike are taken for one another: redacting too much is the safe side.
    expect(scrub("x ıd-secret", ["Id-secret"])).toBe("x <redacted>")
  })

  it("letter cases as culture-specific or compatibility forms write them (from review)", () => {
    // A Turkish-culture ToUpper / ToLower of a pass code.
    expect(scrub("code Pİ-7 refused", ["pi-7"])).toBe("code <redacted> refused")
    expect(scrub("code pın-7 refused", ["PIN-7"])).toBe("code <redacted> refused")
    // The sharp s and its capital; the Kelvin, Ohm and Ångström signs for their letters.
    expect(scrub("x STRAẞE-1 y", ["straße-1"])).toBe("x <redacted> y")
    expect(scrub("x \u212a9-code y", ["k9-code"])).toBe("x <redacted> y")
    expect(scrub("x Ω-code y", ["ω-code"])).toBe("x <redacted> y")
    expect(scrub("x Å-code y", ["å-code"])).toBe("x <redacted> y")
  })

  it("a secret is found whichever of JSON escaping and percent-encoding the server applied (from review)", () => {
    const uid = "4Fab+cd/ef=="
    // After a %, with the secret JSON-escaped (System.Text.Json escapes +, PHP escapes /).
    // (The % that can take its first characters for an escape goes with it.)
    expect(scrub(`uid LIKE '%4Fab\\u002Bcd/ef==%'`, [uid])).toBe("uid LIKE '<redacted>%'")
    expect(scrub(`uid LIKE '%4Fab+cd\\/ef==%'`, [uid])).toBe("uid LIKE '<redacted>%'")
    // A secret holding what looks like a percent escape, JSON-escaped elsewhere.
    expect(scrub("x x%41y\\/z-secret y", ["x%41y/z-secret"])).toBe("x <redacted> y")
    expect(scrub("x ab%2Bcd\\u002Bef y", ["ab%2Bcd+ef"])).toBe("x <redacted> y")
    // ... and one holding a JSON escape, percent-encoded elsewhere.
    expect(scrub("x q\\u0041y%2Fz y", ["q\\u0041y/z"])).toBe("x <redacted> y")
  })

  it("a secret that holds an escape is found decoded too: the server may have decoded it before echoing it (from review)", () => {
    expect(scrub("no person ab+cd/e", ["ab%2Bcd%2Fe"])).toBe("no person <redacted>")
    expect(scrub("no person ab cd", ["ab%20cd"])).toBe("no person <redacted>")
    expect(scrub("no person a/b", ["a\\/b"])).toBe("no person <redacted>")
  })

  it("a GUID given in braces or as 32 digits is found in every GUID form (from review)", () => {
    const guid = "6f3a9c2e-1b4d-4e8f-9a0b-1c2d3e4f5a6b"
    const digits = guid.replace(/-/g, "")
    for (const secret of [`{${guid}}`, digits, digits.toUpperCase()]) {
      for (const echoed of [guid, guid.toUpperCase(), digits, `{${guid}}`, `(${guid})`]) {
        expect(scrub(`person ${echoed} unknown`, [secret])).toMatch(/^person [({]?<redacted>[)}]? unknown$/)
      }
    }
  })

  it("occurrences that touch are replaced once: a text made of a secret shrinks (from review)", () => {
    expect(scrub("aaaa", ["a"])).toBe("<redacted>")
    expect(scrub("x abab y ab", ["ab"])).toBe("x <redacted> y <redacted>")
    expect(redactEvery("a".repeat(1_000_000), "a")).toBe("<redacted>")
    expect(redactEvery(`${"%61".repeat(100_000)}-`, "a")).toBe("<redacted>-")
  })

  it("malformed percent sequences, however many, are characters like any other", () => {
    const malformed = "%F0%C0%80%ED%A0%80%F4%90%80%80%E0%80%AF%80%C2%F5%80"
    expect(redactEvery(`${malformed.repeat(1000)}secret${malformed}`, "secret")).toBe(
      `${malformed.repeat(1000)}<redacted>${malformed}`
    )
    // Well-formed neighbours of each: the first and last of their ranges.
    expect(scrub("x %F0%90%80%80%F4%8F%BF%BF%E0%A0%80%ED%9F%BF y", ["\u{10000}\u{10FFFF}\u0800\uD7FF"])).toBe(
      "x <redacted> y"
    )
  })

  it("nothing but a well-formed escape stands for a character: no other text is taken for any character at all", () => {
    // Each is malformed at one boundary of what is read as an escape; echoed alone, it must not be
    // taken for any character it does not hold as written: every other BMP unit is a secret here.
    const malformed = [
      ...["%0g", "%g0", "%0G", "%G0", "%0z", "%0:", "%0/", "%0@", "%0`", "%0", "%"],
      ...["\\x0041", "\\u00g1", "\\u00G1", "\\u00:1", "\\u004", "\\u", "\\q"],
      ...["%80", "%BF", "%C0%80", "%C1%BF", "%C2", "%C2%C3", "%C2x", "%DF%C0"],
      ...["%E0%9F%BF", "%E0%80%80", "%ED%A0%80", "%ED%BF%BF", "%E2%82", "%E2%82%C3", "%E2%82x", "%E2%C3"],
      ...["%F0%8F%BF%BF", "%F0%80%80%80", "%F4%90%80%80", "%F5%80%80%80", "%FF%80%80%80", "%F0%90%80"],
      ...["%F0%90%80%C3", "%F0%90%80x", "%F0%90%C3"],
      // Escapes without their % or backslash (the text holds each, so that each reading is made).
      ...["%x7e", "%C2x80", "%E2%82x80", "%F0%90%80x80", "xu00ff\\\\"]
    ]
    const written = `[]${malformed.join("")}`
    const holds = (unit: string) =>
      [unit, unit.toLowerCase(), unit.toUpperCase(), unit.toUpperCase().toLowerCase()].some((form) =>
        written.toLowerCase().includes(form.toLowerCase())
      )
    // Every unit a misreading of these could give: below U+0800 (what an overlong form or a bad hex
    // digit gives), around U+2080 (the three-byte sequences above), and the surrogates (four bytes).
    const range = (from: number, to: number) =>
      Array.from({ length: to - from }, (_, i) => String.fromCharCode(from + i))
    const others = [...range(0, 0x800), ...range(0x2000, 0x2100), ...range(0xd800, 0xe000)].filter(
      (unit) => !holds(unit) && unit !== " " && unit !== "+"
    )
    const scrubOthers = scrubber(others)
    expect(malformed.filter((text) => scrubOthers(`[${text}]`) !== `[${text}]`)).toEqual([])
    // The well-formed neighbours are read, so the check above can see a decoding.
    expect(scrubOthers("[%C2%80]")).toBe("[<redacted>]")
    expect(scrubOthers("[\\u00e9]")).toBe("[<redacted>]")
  })

  it("a secret is found where both decodings are needed at once", () => {
    expect(scrub("x a\\/b%2Bc y", ["a/b+c"])).toBe("x <redacted> y")
  })

  it("a character outside the BMP, percent-encoded, is replaced whole, even where only its first half is part of a secret", () => {
    expect(scrub("a%F0%9F%98%80b", ["a\uD83D"])).toBe("<redacted>b")
  })

  it("a secret that only looks like a GUID in braces is looked for as it is", () => {
    const guid = "6f3a9c2e-1b4d-4e8f-9a0b-1c2d3e4f5a6b"
    for (const secret of [`{${guid}x`, `x${guid}}`, `{${guid}`, `${guid}}`]) {
      expect(scrub(`id ${guid} unknown`, [secret], exact)).toBe(`id ${guid} unknown`)
      expect(scrub(`id ${secret} unknown`, [secret], exact)).toBe("id <redacted> unknown")
    }
  })

  it("a backslash escapes only a slash, a quote or a backslash: before another character it is kept", () => {
    expect(scrub("x \\a\\b-secret-12 y", ["ab-secret-12"])).toBe("x \\a\\b-secret-12 y")
  })

  it("a plus sign is a space's form only: other characters are not matched by it", () => {
    expect(scrub("x+y-secret-12", ["xzy-secret-12"])).toBe("x+y-secret-12")
  })

  it("no secret, or an empty one, leaves the text as it is", () => {
    expect(scrub("Stryker was here", [])).toBe("Stryker was here")
    // With no secret there is no pattern: nothing is replaced, not even the word "undefined".
    expect(scrub("the field was undefined", [])).toBe("the field was undefined")
    expect(scrub("abc", [""])).toBe("abc")
  })
})

describe("an escape in the text that takes a secret's first or last characters (found by fuzzing)", () => {
  it("a cut-short escape just before the secret, which itself needs decoding: the secret goes, with the escape", () => {
    expect(scrub("x \\u00aa\\u002Baaaaaaaa y", ["aa+aaaaaaaa"], exact)).toBe("x <redacted> y")
    expect(scrub("x %4f%2Bxyzabc y", ["4f+xyzabc"], exact)).toBe("x <redacted> y")
  })

  it("a secret ending in the start of an escape, which the text goes on from", () => {
    expect(scrub("x abc%2Bdef%41 y", ["abc+def%"], exact)).toBe("x <redacted> y")
    expect(scrub("x abc\\u002Bdef\\u0041 y", ["abc+def\\u00"], exact)).toBe("x <redacted> y")
  })

  it("anchored to an escape only: what is left of the secret alone, or after plain text, is no match", () => {
    expect(scrub("x +aaaaaaaa y", ["aa+aaaaaaaa"], exact)).toBe("x +aaaaaaaa y")
    expect(scrub("x zz\\u002Baaaaaaaa y", ["aa+aaaaaaaa"], exact)).toBe("x zz\\u002Baaaaaaaa y")
    expect(scrub("x \\u00bb\\u002Baaaaaaaa y", ["aa+aaaaaaaa"], exact)).toBe("x \\u00bb\\u002Baaaaaaaa y")
  })
})
