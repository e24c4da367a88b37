/**
 * The person-data operations as plain data, alike in every Effect line: a definition normalised and
 * checked, the documented ones, and an answer's collection found and its items checked whole. The
 * reading of an answer runs on every call: a success is the answer's own array, returned as itself;
 * only a failure makes an object.
 */
import { field, isRecord } from "../json.js"
import { OPERATION_NAME } from "../operationName.js"
import { urlPath } from "../validate.js"
import { type DateRange, Refusal } from "./personRequest.js"

export { Refusal } from "./personRequest.js"

/** Options of a request: the optional date range (the service filters by it; time parts are ignored). */
export interface GetOptions extends DateRange {
  /**
   * Takes out of the answer (its items and `raw`, keys included) every secret the request carried,
   * wherever the server echoed it: the PersonUid, the token and the ApplicationId, in any of the
   * forms errors are scrubbed of. For answers that are written out or shown (the command line
   * does this). Default false: the items are what the server sent.
   */
  readonly redactEchoedSecrets?: boolean | undefined
}

/** What a request returns. */
export interface Result<A> {
  /** The items of the response's collection, decoded. */
  readonly items: ReadonlyArray<A>
  /** The whole response body as parsed JSON, with every field the server sent (the envelope included). */
  readonly raw: unknown
}

/** What a medications request returns. */
export interface MedicationResult<A> {
  /** The items of the response's medication collection, decoded. */
  readonly medications: ReadonlyArray<A>
  /** The whole response body as parsed JSON, with every field the server sent (the envelope included). */
  readonly raw: unknown
}

/** A person-data operation: where it is, and the name of the collection its answer carries. */
export interface Operation {
  /** Labels the operation's errors (`operation`), span and metrics. Letters, digits, `_`, `.`, `-`; at most 64. */
  readonly name: string
  /** Path under `baseUrl`, e.g. `/api/clinical/medication/get`. */
  readonly path: string
  /** The payload collection, found by this name in any letter case, e.g. `Medications`. */
  readonly collection: string
  /** True for an operation that changes data: sent again after it may have reached the server only with `retryWrites`. */
  readonly writes: boolean
}

/** What {@link operation} takes. */
export interface Definition {
  readonly name: string
  readonly path: string
  readonly collection: string
  /** Default false: the documented operations only read. */
  readonly writes?: boolean | undefined
}

/**
 * Defines a person-data operation. A definition that is not valid is refused when it is used,
 * with an `InvalidRequest` naming the field.
 */
export const operation = (definition: Definition): Operation => ({
  name: definition?.name,
  path: definition?.path,
  collection: definition?.collection,
  writes: definition?.writes === true
})

/** A person's medications. The item fields are not published: items are kept whole. */
export const medications: Operation = operation({
  name: "medications",
  path: "/api/clinical/medication/get",
  collection: "Medications"
})

/** A person's ethnicities: items `{ Name, Code }` (see `PersonData.Ethnicity`). */
export const ethnicities: Operation = operation({
  name: "ethnicities",
  path: "/api/Demographics/ethnicity/get",
  collection: "Ethnicities"
})

/** A person's detailed ethnicities: items `{ Name, Code }` (see `PersonData.Ethnicity`). */
export const detailedEthnicities: Operation = operation({
  name: "detailedEthnicities",
  path: "/api/Demographics/detailedethnicity/get",
  collection: "Ethnicities"
})

/** A person's unique device identifiers (UDI). The item fields are not published: items are kept whole. */
export const uniqueDeviceIdentifiers: Operation = operation({
  name: "uniqueDeviceIdentifiers",
  path: "/api/Clinical/UniqueDeviceIdentifier/Get",
  collection: "UniqueDeviceIdentifier"
})

/** Why a definition cannot be used (the field and the reason), or `undefined`. */
export const refusal = (op: Operation): Refusal | undefined => {
  if (typeof op !== "object" || op === null) return new Refusal("operation", "must be a PersonData.operation(...)")
  if (typeof op.name !== "string" || !OPERATION_NAME.test(op.name)) {
    return new Refusal("operation.name", "must be 1 to 64 letters, digits, '_', '.' or '-', starting with a letter")
  }
  const path = urlPath(op.path)
  if (!path.ok) return new Refusal("operation.path", path.reason)
  if (typeof op.collection !== "string" || op.collection.length === 0 || op.collection.length > 128) {
    return new Refusal("operation.collection", "must be the name of the payload collection")
  }
  return undefined
}

/**
 * Why an answer could not be read (each line makes it its `ResponseDecodeError`, scrubbed). A
 * class, told apart by `instanceof`, so that a success is the answer's own array.
 */
export class Unreadable {
  constructor(readonly reason: string) {}
}

/** `Medications` -> `medication`, `Ethnicities` -> `ethnicit`: what a variant name of the collection contains. */
export const stemOf = (collection: string): string => {
  const lower = collection.toLowerCase()
  return lower.endsWith("ies") ? lower.slice(0, -3) : lower.endsWith("s") ? lower.slice(0, -1) : lower
}

/**
 * Finds the collection: the body itself when it is an array; else the field named after it (any
 * letter case; `null` means none); else the only array-valued field whose name contains the
 * collection's stem (`MedicationList`, ...). A body with no such collection, or with several such
 * arrays, is an error rather than an empty or a chosen list: reporting "none" for a response we
 * could not read, or one list of two, would be a clinical error.
 */
export const collectionOf = (op: Operation, json: unknown): ReadonlyArray<unknown> | Unreadable => {
  if (Array.isArray(json)) return json
  if (!isRecord(json)) return new Unreadable("the body is neither a JSON object nor an array")
  const named = field(json, op.collection)
  if (Array.isArray(named)) return named
  if (named === null) return []
  if (named !== undefined) return new Unreadable(`${op.collection} is not an array`)
  const stem = stemOf(op.collection)
  const arrays: Array<ReadonlyArray<unknown>> = []
  for (const key in json) {
    const value = json[key]
    if (Array.isArray(value) && key.toLowerCase().includes(stem)) arrays.push(value)
  }
  if (arrays.length === 1) return arrays[0]!
  // Two lists named like it (current and past medications?): taking either would be a guess.
  return new Unreadable(
    arrays.length === 0
      ? `the body has no ${op.collection} collection`
      : `the body has ${arrays.length} arrays named like ${op.collection} and none exactly: which holds it is unclear`
  )
}

/** One item with every field the server sent. */
export type Item = { readonly [field: string]: unknown }

/**
 * The items kept whole: what `Schema.Array(Item)` accepts (every item a JSON object), checked
 * directly, and the items kept as parsed rather than copied. It runs on every call.
 */
export const keepWhole = (op: Operation, items: ReadonlyArray<unknown>): ReadonlyArray<Item> | Unreadable => {
  for (let i = 0; i < items.length; i++) {
    if (!isRecord(items[i])) return new Unreadable(`${op.collection}[${i}] has the wrong type`)
  }
  return items as ReadonlyArray<Item>
}
