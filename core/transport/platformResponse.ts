/**
 * What an adapter over a platform's HttpClient (Effect 3's `@effect/platform`, Effect 4's
 * `effect/http`) decides the same way in both lines: which answers carry no body, when a declared
 * length can be trusted against the limit, how the bytes read become the response, and what a
 * followed redirect is called.
 */
import { isUtf8 } from "node:buffer"
import type { Received } from "./message.js"

/** The declared size of a body that arrives exactly as sent (no Content-Encoding), if any. */
export const plainLength = (headers: Readonly<Record<string, string>>): number | undefined => {
  const encoding = headers["content-encoding"]
  if (encoding !== undefined && encoding.trim().toLowerCase() !== "identity") return undefined
  const length = headers["content-length"]
  return length !== undefined && /^\d{1,15}$/.test(length) ? Number(length) : undefined
}

/** Answers that carry no body. */
export const hasNoBody = (method: string, status: number): boolean =>
  method === "HEAD" || status === 204 || status === 205 || status === 304

/** No bytes: the body of an answer that has none, or of a redirect left unread. */
export const NO_BYTES = new Uint8Array(0)

/** The origin of a URL, or the URL itself if it has none. */
const originOf = (url: string): string => {
  try {
    return new URL(url).origin
  } catch {
    return url
  }
}

/** Why a response to a request that is not ours is refused: the client followed a redirect. */
export const followedRedirect = (url: string): string =>
  `the HttpClient followed a redirect to ${originOf(url)}; use a client that does not follow redirects`

/** A platform's response as the client reads it (a class, as every object made per request). */
export class PlatformResponse implements Received {
  readonly body: string
  readonly invalidUtf8: boolean
  constructor(readonly status: number, readonly headers: Readonly<Record<string, string>>, bytes: Uint8Array) {
    this.body = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8")
    this.invalidUtf8 = !isUtf8(bytes)
  }
}
