/**
 * What a queue records of its runs, as pure values: a run is one input enqueued (a file, or an
 * application's stream of persons), read by the workers; its counts are exact and its own.
 *
 * Records that decide what is read (which run an input belongs to, how far its enqueue went, its
 * operation and size) are signed with the queue's key: whoever can write Redis without the key
 * cannot make an enqueue skip persons, nor `collect` expect fewer. A record that does not verify
 * is treated as absent (the enqueue starts over; job ids keep it from adding anyone twice).
 *
 * Each position of a run has a slot of {@link SLOT_BYTES} bytes in a Redis string: the first 8
 * bytes of the id of the job that finished there, then `D` (done) or `F` (failed for good). Slots
 * make the counts exact (a job delivered twice counts once; a failure retried into a success
 * moves from one count to the other) and tell an enqueue which persons are done already (BullMQ
 * keeps no completed job): 9 MB for a run of a million persons.
 */
import * as Crypto from "node:crypto"
import * as Json from "../json.js"
import { type JobKeys, nameBytes, RUN_ID } from "./jobSeal.js"

/** Most persons in one run: its slots (9 bytes each) stay far below Redis's 512 MB string. */
export const MAX_RUN_PERSONS = 50_000_000

/** Bytes of one position's slot: the job's fingerprint and its outcome. */
export const SLOT_BYTES = 9

/** How a position ended: done, or failed for good. */
export type Outcome = "D" | "F"

/** The 8 bytes of a job id a slot keeps (an id is 32 hex digits: 64 bits tell jobs apart). */
export const fingerprint = (jobId: string): Buffer => Buffer.from(jobId.slice(0, 16), "hex")

/** What a run records of itself. */
export interface RunRecord {
  /**
   * The run's own id (random): its number may come again (a queue whose records were lost starts
   * over at 1), its id never; jobs and shards carry it.
   */
  readonly id: string
  /** The input it is a run of (the input id, hashed): a run serves that input alone. */
  readonly input: string
  /** The operation every job of the run reads. */
  readonly operation: string
  /** Positions enqueued so far: the run's size once `finished`. */
  readonly persons: number
  /** Whether its enqueue read the whole input. */
  readonly finished: boolean
  /** Whether the input was named (`inputId`): a finished named input is not read again. */
  readonly named: boolean
}

/** A new run's id. */
export const newRunId = (): string => Crypto.randomBytes(8).toString("hex")

const TAG_HEX = 32

const tagOf = (keys: JobKeys, where: string, text: string): string =>
  Crypto.createHmac("sha256", nameBytes(keys))
    .update(`effect-clinical queue record\n${keys.binding}\n${where}\n${text}`)
    .digest("hex")
    .slice(0, TAG_HEX)

/** `value` as a record kept at `where` (a key name): its tag, `.`, then the value as JSON. */
export const signed = (keys: JobKeys, where: string, value: unknown): string => {
  const text = JSON.stringify(value)
  return `${tagOf(keys, where, text)}.${text}`
}

/** The value of a record kept at `where`, or `undefined` when it is not one this key signed there. */
export const verified = (keys: JobKeys, where: string, record: unknown): unknown => {
  if (typeof record !== "string" || record.charAt(TAG_HEX) !== ".") return undefined
  const text = record.slice(TAG_HEX + 1)
  const tag = Buffer.from(record.slice(0, TAG_HEX))
  const expected = Buffer.from(tagOf(keys, where, text))
  // A tag of other characters than hex digits may be longer in bytes: not ours (and timingSafeEqual would throw).
  if (tag.length !== expected.length || !Crypto.timingSafeEqual(tag, expected)) return undefined
  return Json.parse(text)?.value
}

const isCount = (value: unknown, max: number): value is number =>
  Number.isSafeInteger(value) && (value as number) >= 0 && (value as number) <= max

/** A run number as records hold it: 1 or more. */
export const runNumberOf = (value: unknown): number | undefined =>
  isCount(value, Number.MAX_SAFE_INTEGER) && value >= 1 ? value : undefined

/** A run's record read back, or `undefined` for anything else. */
export const runRecordOf = (value: unknown): RunRecord | undefined => {
  if (!Json.isRecord(value)) return undefined
  const { finished, id, input, named, operation, persons } = value
  return typeof id === "string" && RUN_ID.test(id) && typeof input === "string" && typeof operation === "string" &&
      isCount(persons, MAX_RUN_PERSONS) && typeof finished === "boolean" && typeof named === "boolean"
    ? { id, input, operation, persons, finished, named }
    : undefined
}

/** What an input's record says: the run it is, by number and id. */
export interface InputRecord {
  readonly run: number
  readonly id: string
}

export const inputRecordOf = (value: unknown): InputRecord | undefined => {
  if (!Json.isRecord(value)) return undefined
  const { id, run } = value
  const number = runNumberOf(run)
  return number !== undefined && typeof id === "string" && RUN_ID.test(id) ? { run: number, id } : undefined
}

/** A count a Lua script keeps (anyone who writes Redis can write anything): 0 for what is not one. */
export const countOf = (text: unknown): number => {
  const n = Number(text ?? 0)
  return isCount(n, Number.MAX_SAFE_INTEGER) ? n : 0
}
