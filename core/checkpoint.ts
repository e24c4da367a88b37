/**
 * What makes a batch resumable, as pure functions: the checkpoint (the operation, the options and
 * a hash of the input: never a PersonUid) and the lines of the results file, which are the record
 * of which input positions are done. A line is written whole or, cut by a crash, dropped on resume.
 */
import { isFinal } from "./batchTally.js"

export { isFinal }

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
  // Stryker disable next-line ConditionalExpression: equivalent, anything but an object has no version 1 either
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

/** A whole results line that a resumed batch keeps (its person is done), with its index; else `undefined`. */
export const keptLine = (line: string): { readonly index: number; readonly failed: boolean } | undefined => {
  const read = readLine(line)
  if (read === undefined || !read.failed) return read
  try {
    return isFinal((JSON.parse(line) as { readonly error?: unknown }).error) ? read : undefined
    // Stryker disable next-line BlockStatement: equivalent, an empty catch returns undefined too
  } catch {
    return undefined
  }
}
