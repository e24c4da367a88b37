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

/** A header value or body, kept `Redacted` when it holds a secret (`WireValue`). */
export type WireValue = string | Redacted.Redacted<string>

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

/** Where the body's getter finds the text: a property, so that it is found through a `Proxy` or a prototype. */
const SECRET_BODY: unique symbol = Symbol("effect-clinical/secretBody")

/**
 * A request whose body may be a {@link SecretText}. Its `body` is then that text's `Redacted`, made
 * only if read, and the library's transports take the text itself through {@link secretBodyOf}.
 *
 * - `body` is an own enumerable property, not a getter of the class: `{ ...request }` (how an
 *   application's transport copies a request to add a header) copies own properties only, and the
 *   copy would have no body. Defining it costs about 0.15 us per request, against 0.5 to 0.9 us
 *   for making the `Redacted` eagerly (mostly the garbage collector's work on Effect's map).
 * - The getter, one function for every request, reads the text from a symbol-keyed property, so
 *   that it works whatever `this` is: the request, a `Proxy` of it, an object made with
 *   `Object.create(request)`.
 * - Only the request itself, recognised by a private field that no copy, proxy or derived object
 *   has, is sent with that text directly; any other is sent with its own `body`, so one whose
 *   `body` the application replaced sends the replacement.
 */
export class SecretBodyRequest {
  readonly #secretBody: SecretText | undefined
  readonly [SECRET_BODY]: SecretText | undefined
  declare readonly body: WireValue | undefined

  constructor(secretBody: SecretText | undefined, body?: WireValue) {
    this.#secretBody = secretBody
    this[SECRET_BODY] = secretBody
    if (secretBody === undefined) this.body = body
    else Object.defineProperty(this, "body", BODY)
  }

  /** The request's body as a {@link SecretText}, when it is one of these that carries one. */
  static secretBodyOf(request: object): SecretText | undefined {
    return #secretBody in request ? request.#secretBody : undefined
  }
}

const BODY: PropertyDescriptor = {
  get(this: SecretBodyRequest) {
    return this[SECRET_BODY]!.redacted()
  },
  enumerable: true
}

/** The request's body as a {@link SecretText}, when it carries one. */
export const secretBodyOf = SecretBodyRequest.secretBodyOf
