/**
 * Looking for secrets in real captured output, for both lines' suites: a secret counts as leaked in
 * any form a server or a logger could write it (see {@link forms}): any letter case, a GUID without
 * hyphens, JSON-escaped (once or twice), percent-encoded (once or twice), HTML-escaped, base64,
 * reformatted. Effect-free and runner-free: each line's suite asserts with its own `expect`.
 */

const html = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;")

const MONTHS = [
  "January",
  "February",
  "March",
  "April",
  "May",
  "June",
  "July",
  "August",
  "September",
  "October",
  "November",
  "December"
]

/** A date of birth (`MM/DD/YYYY`) as .NET and people reformat it. */
const dateForms = (secret: string): ReadonlyArray<string> => {
  const match = /^(\d{2})\/(\d{2})\/(\d{4})$/.exec(secret)
  if (match === null) return []
  const [, month, day, year] = match as unknown as [string, string, string, string]
  return [
    `${day}/${month}/${year}`,
    `${year}-${month}-${day}`,
    `${MONTHS[Number(month) - 1]} ${Number(day)}, ${year}`,
    String(Date.UTC(Number(year), Number(month) - 1, Number(day)))
  ]
}

/** Each way a secret may be written, by name. */
export const FORMS: ReadonlyArray<readonly [string, (secret: string) => ReadonlyArray<string>]> = [
  ["as written", (secret) => [secret]],
  ["without hyphens", (secret) => [secret.replace(/-/g, "")]],
  ["upper case (ß as SS)", (secret) => [secret.toUpperCase()]],
  ["JSON-escaped", (secret) => {
    const escaped = JSON.stringify(secret).slice(1, -1)
    return [escaped.replace(/\//g, "\\/"), escaped.replace(/\+/g, "\\u002b")]
  }],
  ["JSON inside a JSON string", (secret) => [JSON.stringify(JSON.stringify(secret)).slice(3, -3)]],
  ["percent-encoded", (secret) => [encodeURIComponent(secret)]],
  ["percent-encoded twice", (secret) => [encodeURIComponent(encodeURIComponent(secret))]],
  ["HTML-escaped", (secret) => [html(secret)]],
  ["base64", (secret) => [Buffer.from(secret, "utf8").toString("base64")]],
  ["base64url", (secret) => [Buffer.from(secret, "utf8").toString("base64url")]],
  ["a date reformatted", dateForms]
]

/** Every form of `secret` worth looking for (compared case-insensitively): each of {@link FORMS}. */
export const forms = (secret: string): ReadonlyArray<string> =>
  [...new Set(FORMS.flatMap(([, write]) => write(secret)))].filter((form) => form.length >= 8)

/** Every form of each text, on one line: what a server echoing everything in every way writes. */
export const everyForm = (texts: ReadonlyArray<string>): string => texts.flatMap(forms).join(" ")

/** Pieces this long of a secret's form count as a leak: a secret cut at a boundary still leaks. */
const PIECE = 16

/** The form itself, and every piece of it {@link PIECE} characters long. */
const pieces = (form: string): ReadonlyArray<string> =>
  form.length <= PIECE ? [form] : Array.from({ length: form.length - PIECE + 1 }, (_, i) => form.slice(i, i + PIECE))

/** Every piece of every form of a secret (lower case), with the form it comes from; worked out once per secret. */
const searched = new Map<string, ReadonlyArray<readonly [string, string]>>()

const piecesOf = (secret: string): ReadonlyArray<readonly [string, string]> => {
  let found = searched.get(secret)
  if (found === undefined) {
    found = [
      ...new Map(forms(secret).flatMap((form) => pieces(form.toLowerCase()).map((piece) => [piece, form] as const)))
    ]
    searched.set(secret, found)
  }
  return found
}

/**
 * Why `text` leaks one of `secrets` (which piece of which form), or `undefined` when it holds no
 * form of any, whole or a piece of 16 characters.
 */
export const leakIn = (text: string, secrets: ReadonlyArray<string>): string | undefined => {
  const lower = text.toLowerCase()
  for (const secret of secrets) {
    for (const [piece, form] of piecesOf(secret)) {
      if (lower.includes(piece)) return `${piece} of ${form}`
    }
  }
  return undefined
}
