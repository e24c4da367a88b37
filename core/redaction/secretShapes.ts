/**
 * What looks like a secret, whatever its value: the shapes that server text is scrubbed of on top
 * of the known secrets, because a server can echo a secret in more encodings than any list of
 * forms (base64 of a token, of an ApplicationId or of a whole request body; a date of birth
 * reformatted by .NET). Server text only: redacting too much there is the safe side, and the
 * caller keeps the message readable (our own words, the status, the operation).
 *
 * - a GUID (`3f2504e0-4f89-11d3-9a0c-0305e82c3301`, in braces or not);
 * - a base64 or base64url run of 16 characters or more (`+`, `/`, `-`, `_`, `=` padding; slashes at
 *   either end left, as a URL's), unless it is a word or words of letters alone
 *   (`PersonNotFound`, `INVALID_APPLICATION_ID`, `api/clinical/medication/get`): an `ErrorType`
 *   must stay readable, and base64 of 12 bytes or more holds no digit, `+` or `=` about once in
 *   twenty tries for the shortest, once in ten thousand for a GUID's text, never in practice for a
 *   token or a request body;
 * - a date: numeric (`01/31/1970`, `31.01.1970`, `1970-01-31`, `19700131`, `01311970`,
 *   `1970年1月31日`), with a month's name
 *   (`Saturday, January 31, 1970`, `31 Jan 1970`, `31-Jan-1970`), .NET's JSON date
 *   (`/Date(2649600000)/`), or a time since 1970 in seconds or milliseconds (9 to 13 digits,
 *   which takes a phone number too).
 *
 * Every pattern is linear in the text (bounded repetitions only, no nested quantifiers).
 */

/**
 * Fewest characters of a base64 run that is redacted: base64 of 12 bytes, and as long as the piece
 * of a secret that counts as leaked (a token cut short still leaks that much of it).
 */
export const MIN_BASE64_RUN = 16

const BASE64_RUN = /[A-Za-z0-9+/_-]{16,}={0,2}/g

const SLASH = 0x2f

/** Letters alone, in words joined by single `_`, `-` or `/`: an identifier or a path, not an encoding. */
const WORDS = /^[A-Za-z]+(?:[_/-][A-Za-z]+)*$/

const GUID = /\{?[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\}?/g

const MONTH = "(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|" +
  "sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\\.?"
const WEEKDAY = "(?:(?:mon|tue|wed|thu|fri|sat|sun)[a-z]{0,6}\\.?,?[ \\t]{1,3})?"
const DAY = "\\d{1,2}(?:st|nd|rd|th)?"
const YEAR = "\\d{2,4}"

/** Dates in the forms a .NET service or a person writes one. */
const DATES = new RegExp(
  [
    // 01/31/1970, 31.01.1970, 1-31-70, 1970-01-31, 1970/1/31
    "(?<![\\d.])\\d{1,2}[/.-]\\d{1,2}[/.-]\\d{2,4}(?![\\d.])",
    "(?<![\\d.])\\d{4}[/.-]\\d{1,2}[/.-]\\d{1,2}(?![\\d.])",
    // 19700131, and 01311970 or 31011970 (month or day first)
    "(?<!\\d)(?:1[89]|20)\\d\\d(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\\d|3[01])(?!\\d)",
    "(?<!\\d)(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\\d|3[01])(?:1[89]|20)\\d\\d(?!\\d)",
    "(?<!\\d)(?:0[1-9]|[12]\\d|3[01])(?:0[1-9]|1[0-2])(?:1[89]|20)\\d\\d(?!\\d)",
    // 1970年1月31日, as East Asian cultures write a date
    "\\d{2,4}\\s?年\\s?\\d{1,2}\\s?月\\s?\\d{1,2}\\s?日",
    // Saturday, January 31, 1970; Jan 31 1970
    `\\b${WEEKDAY}${MONTH}[ \\t]{1,3}${DAY},?[ \\t]{1,3}${YEAR}`,
    // Saturday 31 January 1970; 31 Jan 1970; 31-Jan-1970
    `(?<!\\w)${WEEKDAY}${DAY}(?:[ \\t]{1,3}of)?[ \\t-]{1,3}${MONTH},?[ \\t-]{1,3}${YEAR}`,
    // /Date(2649600000)/, /Date(-2649600000+0100)/, and JSON's \/Date(...)\/
    "\\\\?/Date\\(-?\\d{1,16}(?:[+-]\\d{4})?\\)\\\\?/",
    // A time since 1970 in seconds or milliseconds: a date as a number (a phone number is taken too)
    "(?<![\\d.])-?\\d{9,13}(?![\\d.])"
  ].join("|"),
  "gi"
)

/** Calls `mark(start, end)` for every stretch of `text` that has the shape of a secret. */
export const shapesIn = (text: string, mark: (start: number, end: number) => void): void => {
  for (const match of text.matchAll(BASE64_RUN)) {
    // Slashes around a run are a URL's (`https://`, a path's), not the value's: they stay.
    const run = match[0]
    let start = 0
    let end = run.length
    while (start < end && run.charCodeAt(start) === SLASH) start++
    while (end > start && run.charCodeAt(end - 1) === SLASH) end--
    const value = run.slice(start, end)
    if (value.length >= MIN_BASE64_RUN && !WORDS.test(value)) mark(match.index + start, match.index + end)
  }
  for (const match of text.matchAll(GUID)) mark(match.index, match.index + match[0].length)
  for (const match of text.matchAll(DATES)) mark(match.index, match.index + match[0].length)
}

/**
 * Calls `mark(start, end)` for every stretch of a value a user typed (a path, a name) that has the
 * shape of a credential: a GUID, or a base64 run of 16 characters or more that holds a `+` or ends
 * in `=`. Narrower than {@link shapesIn}: a path is a run of base64's characters, and dates and
 * digits are common in file names; a user's own path is shown to them as typed otherwise.
 */
export const credentialShapesIn = (text: string, mark: (start: number, end: number) => void): void => {
  for (const match of text.matchAll(GUID)) mark(match.index, match.index + match[0].length)
  for (const match of text.matchAll(BASE64_RUN)) {
    if (match[0].includes("+") || match[0].endsWith("=")) mark(match.index, match.index + match[0].length)
  }
}
