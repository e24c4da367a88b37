/**
 * A Schema decode failure described by where and how it failed, never by the value found (values
 * here are tokens or patient data, and formatting one may recurse through it). Each line walks its
 * own Schema's issues into {@link Leaf}s; the words and the text are these, alike in both.
 */

/** How a value failed, in words. */
export const ISSUE_WORDS = {
  Missing: "is missing",
  Unexpected: "is not expected",
  Type: "has the wrong type",
  Refinement: "has a value that is not allowed",
  Transformation: "could not be transformed",
  Forbidden: "could not be decoded synchronously",
  OneOf: "matches more than one of its alternatives"
} as const

/** One failure: where (the path from the root) and how. */
export interface Leaf {
  readonly path: ReadonlyArray<PropertyKey>
  readonly words: string
}

/** At most this many failures are listed. */
const LISTED = 5

/** The failures as text: `root.path words`, `; `-separated, the first five and how many more. */
export const describeLeaves = (found: ReadonlyArray<Leaf>, root: string): string => {
  const listed = found.slice(0, LISTED).map(({ path, words }) =>
    `${root}${path.map((key) => (typeof key === "number" ? `[${key}]` : `.${String(key)}`)).join("")} ${words}`
  )
  const more = found.length > LISTED ? ` (and ${found.length - LISTED} more)` : ""
  return `${listed.join("; ")}${more}`
}
