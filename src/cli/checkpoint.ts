/**
 * What makes a batch resumable, as pure functions: the checkpoint (the operation, the options and
 * a hash of the input: never a PersonUid) and the lines of the results file, which are the record
 * of which input positions are done. A line is written whole or, cut by a crash, dropped on resume.
 */

/** The checkpoint file's content. */
export interface Checkpoint {
  readonly version: 1
  readonly operation: string
  /** SHA-256 of the persons file's bytes: resuming over another input is refused. */
  readonly inputSha256: string
  readonly startDate: string | null
  readonly endDate: string | null
}

/** Why `found` cannot be resumed as `wanted`, or `undefined` when it can. */
export const mismatch = (found: unknown, wanted: Checkpoint): string | undefined => {
  if (typeof found !== "object" || found === null || (found as Checkpoint).version !== 1) {
    return "the checkpoint file is not one this version wrote"
  }
  const checkpoint = found as Checkpoint
  if (checkpoint.inputSha256 !== wanted.inputSha256) return "the persons file changed since the batch started"
  if (checkpoint.operation !== wanted.operation) {
    return `the batch was started for ${checkpoint.operation}, not ${wanted.operation}`
  }
  if (checkpoint.startDate !== wanted.startDate || checkpoint.endDate !== wanted.endDate) {
    return "the batch was started with another date range"
  }
  return undefined
}

/**
 * A results line: JSON with its input position first, every non-ASCII character escaped, so that
 * a line's length in characters is its length in bytes (what truncating a cut line relies on).
 */
export const resultLine = (index: number, fields: Record<string, unknown>): string =>
  JSON.stringify({ index, ...fields }).replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`
  ) + "\n"

const LINE = /^\{"index":(\d+),"outcome":"(Success|Failure)"/

/** The input position a complete results line records and whether it failed; `undefined` for a line that is not ours. */
export const readLine = (line: string): { readonly index: number; readonly failed: boolean } | undefined => {
  const match = LINE.exec(line)
  return match === null ? undefined : { index: Number(match[1]), failed: match[2] === "Failure" }
}

/** What the results file says is done, and how many bytes of it are whole lines (the rest is cut off). */
export interface Done {
  readonly indices: ReadonlySet<number>
  /** How many of them failed. */
  readonly failed: number
  readonly completeBytes: number
}

/**
 * Reads the results file's text: every whole line's position; a last line without its newline was
 * cut by a crash and does not count (its person is sent again).
 */
export const doneOf = (text: string): Done => {
  const indices = new Set<number>()
  let failed = 0
  const end = text.lastIndexOf("\n") + 1
  let start = 0
  while (start < end) {
    const next = text.indexOf("\n", start)
    const line = readLine(text.slice(start, next))
    if (line !== undefined && !indices.has(line.index)) {
      indices.add(line.index)
      if (line.failed) failed++
    }
    start = next + 1
  }
  return { indices, failed, completeBytes: end }
}
