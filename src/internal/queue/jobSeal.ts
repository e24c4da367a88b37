/**
 * What a queue's job carries of its person (the core's rules: core/queue/jobSeal.ts), with this
 * line's `Redacted` keys and `Either`: the PersonUid and its position sealed with AES-256-GCM under
 * a key derived from the application's sealing key and bound to the queue, and a job id that tells
 * nothing about either.
 */
import * as Either from "effect/Either"
import * as Redacted from "effect/Redacted"
import * as Core from "../../../core/queue/jobSeal.js"
import type { SealingKey } from "../token/storedEntry.js"

export {
  type JobData,
  jobId,
  type JobPerson,
  type JobRange,
  type JobTerms,
  keyCheck,
  personFingerprint,
  RUN_ID,
  sealJob
} from "../../../core/queue/jobSeal.js"

/** The keys of one queue, `Redacted`: one seals the persons, one names the jobs. */
export type JobKeys = Core.JobKeys<Redacted.Redacted<Uint8Array>>

/** How this line holds a key's bytes. */
export const keyHold: Core.KeyHold<Redacted.Redacted<Uint8Array>> = {
  hold: (bytes) => Redacted.make(bytes),
  bytes: (key) => Redacted.value(key)
}

/** The keys of the queue `name` under `prefix`. */
export const jobKeys = (key: SealingKey, prefix: string, name: string): JobKeys =>
  Core.jobKeys(Redacted.value(key), prefix, name, keyHold)

/**
 * The person a job's data holds, and its terms, or why it holds none (never the data itself): not
 * ours, cut, sealed under another key or for another queue, or tampered with.
 */
export const openJob = (keys: Core.JobKeys, data: unknown): Either.Either<Core.JobPerson & Core.JobTerms, string> => {
  const opened = Core.openJob(keys, data)
  return opened.ok ? Either.right(opened.value) : Either.left(opened.reason)
}
