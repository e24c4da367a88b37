/**
 * Text that holds a secret (a request body with a PersonUid, a pass code, a date of birth): shown
 * as `<redacted>` by `String`, `JSON.stringify` and `util.inspect`, revealed only by the code that
 * writes the bytes, and handed out as an Effect `Redacted` to any code that asks for one.
 *
 * Why not an Effect `Redacted` from the start: Effect keeps the value of every `Redacted` in one
 * global `WeakMap`, and an entry made on every call cost about 0.9 us of the call's 13 in memory
 * (7%), most of it the garbage collector's work on that map. A request body is made on every call
 * and, on the call's common path, read only by the transport that writes it: it lives in a private
 * field here, and a `Redacted` of it is made only if some other code reads the request's `body`.
 */
import * as Redacted from "effect/Redacted"

const SHOWN = "<redacted>"

/** A secret text. */
export class SecretText {
  readonly #text: string
  #redacted: Redacted.Redacted<string> | undefined = undefined

  constructor(text: string) {
    this.#text = text
  }

  /** The text itself: only for code that writes the bytes. */
  reveal(): string {
    return this.#text
  }

  /** The same text as an Effect `Redacted`, made once, when first asked for. */
  redacted(): Redacted.Redacted<string> {
    return this.#redacted ??= Redacted.make(this.#text)
  }

  toString(): string {
    return SHOWN
  }

  toJSON(): string {
    return SHOWN
  }

  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return SHOWN
  }
}

/**
 * A request whose body is a {@link SecretText}: its `body` is that text's `Redacted`, made only if
 * read; the library's transports take the text from `secretBody` (see `HttpTransport.wireBody`).
 */
export interface WithSecretBody {
  readonly secretBody: SecretText
}

/** The request's body as a {@link SecretText}, when it carries one. */
export const secretBodyOf = (request: object): SecretText | undefined => {
  const body = (request as Partial<WithSecretBody>).secretBody
  return body instanceof SecretText ? body : undefined
}
