/**
 * A token ready to use, as both Effect lines hand it out (`S`: the line's `Redacted`), and how an
 * issued token becomes one: its refresh windows placed, its number given.
 */
import type { InvalidRequest } from "../errors.js"
import type { Cached, Windows } from "./tokenCache.js"
import { windowsOf } from "./tokenCache.js"
import type { Issued } from "./tokenResponse.js"

/** A token ready to use. All times are epoch milliseconds on the local clock. */
export interface AccessToken<S> {
  /** The bearer token itself. */
  readonly token: S
  /** The `Authorization` header value, `Bearer <token>`. */
  readonly authorization: S
  /** 1 for the first token this service obtained, then 2, 3, ... */
  readonly generation: number
  /** When the request for this token was sent (its lifetime is counted from here). */
  readonly issuedAt: number
  /** When the token expires: `issuedAt` plus the lifetime the server gave. */
  readonly expiresAt: number
  /** The lifetime used: the one the server gave (`TOKEN_EXPIRES - Date`), at most `maxTokenLifetime`. */
  readonly lifetimeMillis: number
  /** The lifetime the server gave; larger than `lifetimeMillis` when the cap cut it. */
  readonly serverLifetimeMillis: number
  /** The server's clock minus ours, from its `Date` header; `undefined` when it sent none. */
  readonly serverClockSkewMillis: number | undefined
}

/** A token as cached: `issued`, its refresh windows placed, numbered `generation`, `more` of the line's own beside. */
export const cachedToken = <S, More extends object>(
  windows: Windows,
  issued: Issued<S>,
  generation: number,
  bearer: (token: S) => S,
  more: More
): Cached<AccessToken<S> & More> => {
  const at = windowsOf(windows, issued.sentAt, issued.lifetimeMillis)
  return {
    ...at,
    generation,
    token: {
      token: issued.token,
      authorization: bearer(issued.token),
      generation,
      issuedAt: issued.sentAt,
      expiresAt: at.expiresAt,
      lifetimeMillis: issued.lifetimeMillis,
      serverLifetimeMillis: issued.serverLifetimeMillis,
      serverClockSkewMillis: issued.serverClockSkewMillis,
      ...more
    }
  }
}

/**
 * The longest wait for a token being fetched, in milliseconds (a plain number is taken as it is, no
 * duration decoded on the call path), or the refusal of a `maxWait` that is no duration. `decode`
 * reads the line's own duration forms.
 */
export const maxWaitMillisOf = (
  maxWait: unknown,
  decode: (value: unknown) => number | undefined
): number | InvalidRequest => {
  if (typeof maxWait === "number" && maxWait >= 0) return maxWait
  // Effect's Duration reads NaN and negative numbers as zero; as an argument they are a mistake.
  const negative = typeof maxWait === "number" || (typeof maxWait === "string" && maxWait.trim().startsWith("-"))
  const millis = negative ? undefined : decode(maxWait)
  return millis !== undefined
    ? millis
    : { _tag: "InvalidRequest", operation: "token", field: "maxWait", reason: "must be a duration, e.g. \"5 seconds\"" }
}

/** The warning when `maxTokenLifetime` cut a token's lifetime: logged once per token cache. */
export const LIFETIME_CUT = "the token endpoint gave a lifetime longer than maxTokenLifetime; using the cap"

/** Whether `token`'s lifetime was cut by `maxTokenLifetime`, and the warning's annotations if so. */
export const lifetimeCut = (
  token: Pick<AccessToken<unknown>, "lifetimeMillis" | "serverLifetimeMillis">
): { readonly serverLifetimeSeconds: number; readonly lifetimeSeconds: number } | undefined =>
  token.lifetimeMillis >= token.serverLifetimeMillis ? undefined : {
    serverLifetimeSeconds: Math.round(token.serverLifetimeMillis / 1000),
    lifetimeSeconds: Math.round(token.lifetimeMillis / 1000)
  }
