/**
 * What a queue's job carries of its person: the PersonUid and its input position, sealed with
 * AES-256-GCM under a key derived from the application's sealing key and bound to the queue (its
 * prefix and name), and a job id that is stable for the same person at the same position but
 * tells nothing about either. A Redis reader learns how many persons there are, never who.
 *
 * Two keys are derived (HKDF-SHA256) from the one the application holds, one per purpose: the
 * same 32 bytes never both encrypt and name, and the token store's own use of the key stays apart.
 * Each line holds the keys its way (its `Redacted`: see {@link KeyHold}); they are read here only
 * to seal, open or name.
 */
import * as Crypto from "node:crypto"
import * as Json from "../json.js"
import { derivedKeyBytes } from "../token/storedEntry.js"
import { accept, type Checked, MAX_PERSON_UID_LENGTH, refuse } from "../validate.js"

/** A run's id (see `runRecord`): 16 hex digits. */
export const RUN_ID = /^[0-9a-f]{16}$/

/** How a line holds a key's bytes (its `Redacted`), and reads them back for one use. */
export interface KeyHold<K> {
  readonly hold: (bytes: Uint8Array) => K
  readonly bytes: (key: K) => Uint8Array
}

/** The keys of one queue, as the line holds them (`K`): one seals the persons, one names the jobs. */
export interface JobKeys<K = unknown> {
  readonly seal: K
  readonly name: K
  /** What a job's seal is bound to: the queue's prefix and name. */
  readonly binding: string
  /** The bytes of one of the keys above (a method: keys held any way are read alike here). */
  bytes(key: K): Uint8Array
}

/** The keys of the queue `name` under `prefix`, from the sealing key's bytes. */
export const jobKeys = <K>(key: Uint8Array, prefix: string, name: string, hold: KeyHold<K>): JobKeys<K> => ({
  seal: hold.hold(derivedKeyBytes(key, "effect-clinical queue: persons")),
  name: hold.hold(derivedKeyBytes(key, "effect-clinical queue: job ids")),
  binding: `effect-clinical queue\n${prefix}\n${name}`,
  bytes: hold.bytes
})

const sealBytes = (keys: JobKeys): Uint8Array => keys.bytes(keys.seal)

/** The naming key's bytes (job ids, fingerprints, record tags). */
export const nameBytes = (keys: JobKeys): Uint8Array => keys.bytes(keys.name)

/** What a job holds in Redis: its person, sealed. */
export interface JobData {
  readonly sealed: string
}

/** The person of a job, opened. */
export interface JobPerson {
  readonly personUid: string
  /** The person's position in the input, from 0. */
  readonly index: number
}

/** The date range a job is read with (`YYYY-MM-DD`), each end when given: it travels with the job. */
export interface JobRange {
  readonly startDate?: string | undefined
  readonly endDate?: string | undefined
}

/**
 * What a job is read with, sealed with its person: whoever can write Redis cannot turn a
 * medications job into an ethnicities read, nor move it to another run.
 */
export interface JobTerms {
  /** The operation's name. */
  readonly operation: string
  /** The run it belongs to (see `runRecord`): its number, and its id. */
  readonly run: number
  readonly runId: string
  /**
   * Whether the run is named: a named run's job is its position's (the same person at another
   * position is another job); the unnamed run's is its person's, wherever they stood.
   */
  readonly named: boolean
  readonly range: JobRange
}

const IV_BYTES = 12
const TAG_BYTES = 16
/** Longest sealed text read: a PersonUid is at most 2,048 characters. */
const MAX_SEALED_LENGTH = 16 * 1024

/**
 * A PersonUid as a job carries it. One longer than any PersonUid is cut just past the longest, so
 * that the worker refuses it as too long (with a typed error for that person), whatever its size.
 */
const bounded = (personUid: string): string => personUid.slice(0, MAX_PERSON_UID_LENGTH + 1)

/** The job of the person at `index`, read on `terms`: its data, and its id. */
export const sealJob = (
  keys: JobKeys,
  person: JobPerson,
  terms: JobTerms
): { readonly id: string; readonly data: JobData } => {
  const personUid = bounded(person.personUid)
  const iv = Crypto.randomBytes(IV_BYTES)
  const cipher = Crypto.createCipheriv("aes-256-gcm", sealBytes(keys), iv)
  // Stryker disable next-line StringLiteral: equivalent, Node reads an empty encoding as UTF-8
  cipher.setAAD(Buffer.from(keys.binding, "utf8"))
  const { named, range: { endDate: e, startDate: s }, operation: o, run: r, runId: u } = terms
  const json = JSON.stringify({ p: personUid, i: person.index, o, r, u, n: named ? 1 : 0, s, e })
  // Stryker disable next-line StringLiteral: equivalent, Node reads an empty encoding as UTF-8
  const sealed = Buffer.concat([iv, cipher.update(json, "utf8"), cipher.final(), cipher.getAuthTag()])
  return { id: jobId(keys, { personUid, index: person.index }, terms), data: { sealed: sealed.toString("base64") } }
}

/**
 * A job's id: 32 hex digits of an HMAC of the person, their position and the terms. The same input
 * enqueued again in a run gives the same ids (BullMQ adds no job whose id exists); without the
 * key, an id cannot be traced back to a person, nor a guessed person checked against it.
 */
export const jobId = (keys: JobKeys, person: JobPerson, terms: JobTerms): string =>
  Crypto.createHmac("sha256", nameBytes(keys))
    .update(JSON.stringify([
      terms.run,
      terms.runId,
      terms.operation,
      terms.named ? person.index : null,
      person.personUid,
      terms.range.startDate ?? "",
      terms.range.endDate ?? ""
    ]))
    .digest("hex")
    .slice(0, 32)

/**
 * A person of a run, as the unnamed run's sets hold them: 8 bytes of an HMAC of the person, the
 * run, the operation and the range. Says nothing of who without the key.
 */
export const personFingerprint = (keys: JobKeys, personUid: string, terms: JobTerms): Buffer =>
  Crypto.createHmac("sha256", nameBytes(keys))
    .update(JSON.stringify([
      "person",
      terms.runId,
      terms.operation,
      personUid,
      terms.range.startDate ?? "",
      terms.range.endDate ?? ""
    ]))
    .digest()
    .subarray(0, 8)

/**
 * The person a job's data holds, and its terms, or why it holds none (never the data itself): not
 * ours, cut, sealed under another key or for another queue, or tampered with.
 */
export const openJob = (keys: JobKeys, data: unknown): Checked<JobPerson & JobTerms> => {
  const sealedText = Json.isRecord(data) ? data.sealed : undefined
  if (typeof sealedText !== "string" || sealedText.length > MAX_SEALED_LENGTH) {
    return refuse("the job holds no sealed person: it was not added by effect-clinical")
  }
  const sealed = Buffer.from(sealedText, "base64")
  if (sealed.length <= IV_BYTES + TAG_BYTES) return refuse("the job's sealed person is cut short")
  let json: string
  try {
    const decipher = Crypto.createDecipheriv("aes-256-gcm", sealBytes(keys), sealed.subarray(0, IV_BYTES))
    // Stryker disable next-line StringLiteral: equivalent, Node reads an empty encoding as UTF-8
    decipher.setAAD(Buffer.from(keys.binding, "utf8"))
    decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES))
    json = Buffer.concat([decipher.update(sealed.subarray(IV_BYTES, sealed.length - TAG_BYTES)), decipher.final()])
      .toString("utf8")
  } catch {
    return refuse(
      "the job's sealed person does not open: another sealing key, another queue, or tampered with"
    )
  }
  const opened = Json.parse(json)?.value
  const { e, i, n, o, p, r, s, u } = (Json.isRecord(opened) ? opened : {}) as Record<string, unknown>
  const day = (value: unknown) => value === undefined || typeof value === "string"
  return typeof p === "string" && Number.isSafeInteger(i) && (i as number) >= 0 && typeof o === "string" &&
      Number.isSafeInteger(r) && (r as number) >= 1 && typeof u === "string" && RUN_ID.test(u) &&
      (n === 0 || n === 1) && day(s) && day(e)
    ? accept({
      personUid: p,
      index: i as number,
      operation: o,
      run: r as number,
      runId: u,
      named: n === 1,
      range: {
        ...(s === undefined ? {} : { startDate: s as string }),
        ...(e === undefined ? {} : { endDate: e as string })
      }
    })
    : refuse("the job's sealed person is not one effect-clinical wrote")
}

/**
 * What the queue records of its key, to tell a worker with another key at start rather than
 * failing every job: an HMAC of a fixed text, which says nothing of the key.
 */
export const keyCheck = (keys: JobKeys): string =>
  Crypto.createHmac("sha256", nameBytes(keys)).update("effect-clinical queue: key check").digest("hex")
    .slice(0, 16)
