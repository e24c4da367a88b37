/**
 * A failure the core decided on (plain data, core/errors.ts) as this line's error class: how the
 * core's decisions (responses read, a pause's fast failure) reach a caller of this line.
 */
import type * as Core from "../../core/errors.js"
import {
  type AnyClinicalError,
  ApiError,
  BadRequest,
  CircuitOpen,
  ClientClosed,
  InvalidConfig,
  InvalidRequest,
  RateLimited,
  ResponseDecodeError,
  ServerError,
  TokenExpired,
  TokenStoreError,
  TransportError,
  Unauthorized,
  UnexpectedStatus
} from "../ClinicalError.js"

/** Each failure's class, by its tag. */
const classes = {
  InvalidConfig,
  InvalidRequest,
  TransportError,
  Unauthorized,
  TokenExpired,
  BadRequest,
  RateLimited,
  ServerError,
  UnexpectedStatus,
  ResponseDecodeError,
  ApiError,
  TokenStoreError,
  CircuitOpen,
  ClientClosed
} as const

/** A failure the core decided on (plain data), as this line's error class. */
export const fromCore = <E extends Core.AnyClinicalError>(error: E): Extract<AnyClinicalError, { _tag: E["_tag"] }> => {
  const { _tag, ...fields } = error
  const Class = classes[_tag] as unknown as new(fields: object) => Extract<AnyClinicalError, { _tag: E["_tag"] }>
  return new Class(fields)
}
