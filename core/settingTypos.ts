/**
 * `CLINICAL_*` variables that look like a mistyped setting (`CLINICAL_REQUEST_TIMOUT`): a setting
 * that is misspelled is silently not set, and its default used. Pure: the callers warn.
 */

/** A variable a few letters away from a known one, and that one. */
export interface Misspelling {
  readonly variable: string
  readonly nearest: string
}

const PREFIX = "CLINICAL_"

/** Longer names are no typo of ours: not compared, so that the cost stays bounded whatever the environment holds. */
const LONGEST = 64

/** Edit distance (insertions, deletions, substitutions, adjacent swaps), over the parts after the prefix. */
export const distance = (a: string, b: string): number => {
  const rows: Array<Array<number>> = [Array.from({ length: b.length + 1 }, (_, j) => j)]
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let best = Math.min(rows[i - 1]![j]! + 1, row[j - 1]! + 1, rows[i - 1]![j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, rows[i - 2]![j - 2]! + 1)
      }
      row.push(best)
    }
    rows.push(row)
  }
  return rows[a.length]![b.length]!
}

/** How many edits still count as a typo of a name: 2, or a third of it for long names. */
const tolerance = (name: string): number => Math.max(2, Math.floor(name.length / 3))

/**
 * The variables of `present` that start with `CLINICAL_`, are not in `known`, and are within a
 * typo of one of them (letter case ignored), each with the nearest. Another `CLINICAL_*` name of
 * the application's own, far from every known one, is left alone.
 */
export const misspelledSettings = (
  present: Iterable<string>,
  known: ReadonlyArray<string>
): ReadonlyArray<Misspelling> => {
  const found: Array<Misspelling> = []
  const knownSet = new Set(known)
  for (const variable of present) {
    if (!variable.toUpperCase().startsWith(PREFIX) || knownSet.has(variable) || variable.length > LONGEST) continue
    const tail = variable.slice(PREFIX.length).toUpperCase()
    let nearest: { name: string; edits: number } | undefined
    for (const name of known) {
      const edits = distance(tail, name.slice(PREFIX.length))
      if (nearest === undefined || edits < nearest.edits) nearest = { name, edits }
    }
    if (nearest !== undefined && nearest.edits <= tolerance(nearest.name.slice(PREFIX.length))) {
      found.push({ variable, nearest: nearest.name })
    }
  }
  return found
}

/** The warning for one: names only, never a value. */
export const misspellingWarning = ({ nearest, variable }: Misspelling): string =>
  `${variable} is not a setting of effect-clinical and is ignored: did you mean ${nearest}?`
