/**
 * Each line's error classes conform to the core's failures (core/errors.ts), both ways: every
 * failure the core can decide on has a class in the line (found by its tag, as `fromCore` finds it),
 * and that class holds exactly the core's fields, shows the core's message, and serialises to
 * nothing but its tag and fields. A line missing a variant the core grew fails here, by name.
 */
import * as Core from "../core/errors.js"
import type { Runner } from "./driver.js"

/** One failure of each tag, every optional field set: what each class must hold and say. */
export const SAMPLES: { readonly [Tag in keyof typeof Core.messages]: Extract<Core.AnyClinicalError, { _tag: Tag }> } =
  {
    InvalidConfig: {
      _tag: "InvalidConfig",
      setting: "baseUrl",
      reason: "must be an https URL",
      others: [{ setting: "CLINICAL_DEADLINE", reason: "must be a duration" }]
    },
    InvalidRequest: { _tag: "InvalidRequest", operation: "medications", field: "personUid", reason: "is empty" },
    TransportError: {
      _tag: "TransportError",
      operation: "medications",
      reason: "Network",
      method: "POST",
      url: "https://api.example/api/clinical/medication/get",
      detail: "ECONNRESET: socket hang up",
      requestSent: false
    },
    Unauthorized: {
      _tag: "Unauthorized",
      operation: "token",
      method: "POST",
      url: "https://auth.example/t",
      status: 401
    },
    TokenExpired: {
      _tag: "TokenExpired",
      operation: "medications",
      method: "POST",
      url: "https://a.example/m",
      status: 419
    },
    BadRequest: {
      _tag: "BadRequest",
      operation: "medications",
      method: "POST",
      url: "https://a.example/m",
      status: 400
    },
    RateLimited: {
      _tag: "RateLimited",
      operation: "medications",
      method: "POST",
      url: "https://a.example/m",
      status: 429,
      retryAfterMillis: 2000
    },
    ServerError: {
      _tag: "ServerError",
      operation: "token",
      method: "POST",
      url: "https://auth.example/t",
      status: 503,
      retryAfterMillis: 1000
    },
    UnexpectedStatus: {
      _tag: "UnexpectedStatus",
      operation: "medications",
      method: "POST",
      url: "https://a.example/m",
      status: 302,
      location: "https://elsewhere.example"
    },
    ResponseDecodeError: {
      _tag: "ResponseDecodeError",
      operation: "ethnicities",
      method: "POST",
      url: "https://a.example/e",
      status: 200,
      reason: "Ethnicities[1].Code has the wrong type"
    },
    ApiError: {
      _tag: "ApiError",
      operation: "medications",
      method: "POST",
      url: "https://a.example/m",
      status: 200,
      errorType: "NotFound",
      errorMessage: "no such person"
    },
    TokenStoreError: { _tag: "TokenStoreError", operation: "token", reason: "Unavailable", detail: "ECONNREFUSED" },
    CircuitOpen: { _tag: "CircuitOpen", operation: "medications", retryAfterMillis: 1500 },
    ClientClosed: { _tag: "ClientClosed", operation: "medications", whileRunning: true }
  }

/** What the specification asks of a line: its `fromCore`, and its guard of every error it fails with. */
export interface ErrorLine {
  readonly line: string
  readonly fromCore: (error: Core.AnyClinicalError) => unknown
  readonly isClinicalError: (value: unknown) => boolean
}

const fail = (message: string): never => {
  throw new Error(message)
}

/** The conformance specification, for `errors`' line. */
export const conformance = ({ describe, it }: Runner, errors: ErrorLine): void => {
  describe(`the error classes conform to the core's failures (${errors.line})`, () => {
    for (const [tag, sample] of Object.entries(SAMPLES)) {
      it(`${tag}: a class of its own, the core's fields and message, its JSON the fields alone`, async () => {
        let made: unknown
        try {
          made = errors.fromCore(sample)
        } catch (error) {
          fail(`${errors.line} has no class for the core's ${tag}: ${String(error)}`)
        }
        const error = made as { readonly _tag?: unknown; readonly message?: unknown }
        if (error._tag !== tag) fail(`${tag} became ${String(error._tag)}`)
        if (!(made instanceof Error)) fail(`${tag} is not an Error`)
        if (!errors.isClinicalError(made)) fail(`${tag} is not recognised by isClinicalError`)
        const expected = Core.messageOf(sample)
        if (error.message !== expected) fail(`${tag}'s message is ${String(error.message)}, the core's ${expected}`)
        const json = JSON.stringify(made)
        if (json !== JSON.stringify(JSON.parse(JSON.stringify(sample)))) {
          // The same fields whatever their order.
          const a = JSON.parse(json) as Record<string, unknown>
          const b = JSON.parse(JSON.stringify(sample)) as Record<string, unknown>
          const keys = (o: Record<string, unknown>) => Object.keys(o).sort().join(",")
          if (keys(a) !== keys(b)) fail(`${tag}'s JSON has the fields ${keys(a)}, the core's ${keys(b)}`)
          for (const key of Object.keys(b)) {
            if (JSON.stringify(a[key]) !== JSON.stringify(b[key])) fail(`${tag}.${key} is ${JSON.stringify(a[key])}`)
          }
        }
      })
    }
  })
}
