/** A response as every transport hands it to the client, whatever the Effect line. */

/** One HTTP response. Header names are lower-cased; repeated headers are joined with `, `. */
export interface Received {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
  /**
   * True when the body's bytes were not UTF-8 (the body then holds U+FFFD in their place): the
   * client refuses such a body rather than read corrupted clinical text. A transport that only
   * sees text leaves it out.
   */
  readonly invalidUtf8?: boolean | undefined
}

/** A JSON response, for in-memory handlers in tests. */
export const jsonResponse = (
  status: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = {}
): Received => {
  const lower: Record<string, string> = { "content-type": "application/json; charset=utf-8" }
  for (const name in headers) lower[name.toLowerCase()] = headers[name]!
  return { status, headers: lower, body: typeof body === "string" ? body : JSON.stringify(body) }
}
