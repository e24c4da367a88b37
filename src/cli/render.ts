/**
 * What the command line prints, as pure functions of what it has: tables for people, JSON for
 * scripts. Persons are named by their position in the input (`#1`), never by their PersonUid.
 */
import { credentialShapesIn } from "../../core/redaction/secretShapes.js"
import type { ClinicalError } from "../ClinicalError.js"
import { redactMarked } from "../internal/redaction/redaction.js"

/**
 * What a terminal would act on rather than show: control characters (C0, DEL and C1: an escape
 * sequence could rewrite the screen or the window's title), line and paragraph breaks (a server
 * could add lines that look like ours), and every format character (Unicode's Cf: bidirectional
 * overrides and isolates reorder what is shown; zero-width, soft hyphen, tag characters hide).
 */
const UNSAFE = /[\p{Cc}\p{Cf}\u2028\u2029]/gu

/**
 * Text that may hold a server's words, safe to print to a terminal: everything {@link UNSAFE}
 * shown as `?`, so it stays on one line and shows what it says. Every server-controlled string the
 * command line prints goes through this or {@link json}.
 */
export const printable = (text: string): string => text.replace(UNSAFE, "?")

/** Several lines of such text (a stack trace): each line made printable, the breaks between them kept. */
export const printableLines = (text: string): string => text.split("\n").map(printable).join("\n")

/** {@link UNSAFE} but C0 (which `JSON.stringify` escapes in strings; its own line breaks are layout). */
const LEFT_RAW_BY_JSON = /[\u007f-\u009f\p{Cf}\u2028\u2029]/gu

/**
 * A value as JSON, safe to print: what `JSON.stringify` leaves raw of {@link UNSAFE} (DEL, C1,
 * bidirectional and format characters, U+2028) escaped as `\uXXXX`, so the value reads back the same.
 */
export const json = (value: unknown, indent?: number): string =>
  JSON.stringify(value, null, indent).replace(
    LEFT_RAW_BY_JSON,
    // A character outside the BMP (a tag character) is escaped as its two surrogates.
    (c) => c.split("").map((unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, "0")}`).join("")
  )

/** Longest value a user typed that a message repeats. */
const MAX_TYPED = 200

/**
 * A value the user typed (a path), as a message may repeat it: whatever has a credential's shape
 * taken out (a mistyped command line is where a secret ends up as an argument), made printable,
 * cut.
 */
export const typed = (value: string): string => {
  const shown = printable(redactMarked(value, credentialShapesIn))
  return shown.length > MAX_TYPED ? `${shown.slice(0, MAX_TYPED - 1)}…` : shown
}

/** Longest cell of a table; longer values are cut with `…` (`--json` prints them whole). */
const MAX_CELL = 40

const cell = (value: unknown): string => {
  const text = value === null || value === undefined
    ? ""
    : typeof value === "string"
    ? value
    : typeof value === "object"
    ? JSON.stringify(value)
    : String(value)
  // One line per row: a newline or tab in a value would break the columns.
  const flat = printable(text.replace(/[\r\n\t]+/g, " "))
  return flat.length > MAX_CELL ? `${flat.slice(0, MAX_CELL - 1)}…` : flat
}

/** Rows under a header, columns padded to their widest cell. */
export const table = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i]?.length ?? 0)))
  const line = (cells: ReadonlyArray<string>) =>
    cells.map((text, i) => (i === cells.length - 1 ? text : text.padEnd(widths[i]!))).join("  ").trimEnd()
  return [line(header), line(widths.map((width) => "-".repeat(width))), ...rows.map(line)].join("\n")
}

/** Items as a table: one column per field (in the order first seen), one row per item. */
export const itemsTable = (items: ReadonlyArray<Readonly<Record<string, unknown>>>): string => {
  const columns: Array<string> = []
  const seen = new Set<string>()
  for (const item of items) {
    for (const key of Object.keys(item)) {
      if (!seen.has(key)) {
        seen.add(key)
        columns.push(key)
      }
    }
  }
  // Field names are the server's too: made printable and cut like any cell.
  return table(columns.map(cell), items.map((item) => columns.map((column) => cell(item[column]))))
}

/** Name and value pairs, one per line, names aligned. */
export const fields = (pairs: ReadonlyArray<readonly [string, string]>): string => {
  const width = Math.max(...pairs.map(([name]) => name.length))
  return pairs.map(([name, value]) => `${name.padEnd(width)}  ${printable(value)}`).join("\n")
}

/** An error as JSON: its tag, its message and its fields (every one safe to print: see `ClinicalError`). */
export const errorJson = (error: ClinicalError): Record<string, unknown> => ({
  ...(JSON.parse(JSON.stringify(error)) as Record<string, unknown>),
  _tag: error._tag,
  message: error.message
})

/** `1.5 s`, `2 min 5 s`, `1 h 0 min`: a duration for people. */
export const duration = (millis: number): string => {
  const sign = millis < 0 ? "-" : ""
  const abs = Math.abs(millis)
  if (abs < 1000) return `${sign}${Math.round(abs)} ms`
  if (abs < 60_000) return `${sign}${(abs / 1000).toFixed(1)} s`
  const seconds = Math.round(abs / 1000)
  if (seconds < 3600) return `${sign}${Math.floor(seconds / 60)} min ${seconds % 60} s`
  return `${sign}${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`
}

/** A person by position: `#3`. */
export const person = (index: number): string => `#${index + 1}`

/** `1 item`, `5 items`. */
export const count = (n: number, noun: string): string => `${n} ${noun}${n === 1 ? "" : "s"}`

/** Width of a progress bar, in characters. */
const BAR_WIDTH = 24

/**
 * A progress bar redrawn in place at a terminal: `fraction` (0 to 1) filled, `text` after it, cut
 * to `columns` (the terminal's width) so that the line never wraps (a wrapped line is not redrawn).
 */
export const bar = (fraction: number, text: string, columns: number | undefined = undefined): string => {
  const filled = Math.max(0, Math.min(BAR_WIDTH, Math.round(fraction * BAR_WIDTH)))
  const line = `[${"#".repeat(filled)}${" ".repeat(BAR_WIDTH - filled)}] ${text}`
  const fits = columns === undefined || columns < 2 ? line : line.slice(0, columns - 1)
  return `\r${fits}\x1b[K`
}
