/**
 * Text that holds a secret (a request body with a PersonUid, a pass code, a date of birth): shown
 * as `<redacted>` by `String`, `JSON.stringify` and `util.inspect`, revealed only by the code that
 * writes the bytes, and handed out as the line's `Redacted` to any code that asks for one (each
 * line subclasses {@link SecretText} with how it makes one).
 *
 * Why not a `Redacted` from the start: Effect keeps the value of every `Redacted` in one global
 * `WeakMap`, and an entry made on every call cost about 0.9 us of the call's 13 in memory (7%), most
 * of it the garbage collector's work on that map. A request body is made on every call and, on the
 * call's common path, read only by the transport that writes it: it lives in a private field here,
 * and a `Redacted` of it is made only if some other code reads the request's `body`.
 */

const SHOWN = "<redacted>"

/** A secret text; `R` is the line's `Redacted<string>`. */
export abstract class SecretText<R> {
  readonly #text: string
  #redacted: R | undefined = undefined

  constructor(text: string) {
    this.#text = text
  }

  /** The line's `Redacted` of `text`. */
  protected abstract redact(text: string): R

  /** The text itself: only for code that writes the bytes. */
  reveal(): string {
    return this.#text
  }

  /** The same text as the line's `Redacted`, made once, when first asked for. */
  redacted(): R {
    return this.#redacted ??= this.redact(this.#text)
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
export class SecretBodyRequest<R> {
  readonly #secretBody: SecretText<R> | undefined
  readonly [SECRET_BODY]: SecretText<R> | undefined
  declare readonly body: string | R | undefined

  constructor(secretBody: SecretText<R> | undefined, body?: string | R) {
    this.#secretBody = secretBody
    this[SECRET_BODY] = secretBody
    if (secretBody === undefined) this.body = body
    else Object.defineProperty(this, "body", BODY)
  }

  /** The request's body as a {@link SecretText}, when it is one of these that carries one. */
  static secretBodyOf<R>(request: object): SecretText<R> | undefined {
    return #secretBody in request ? request.#secretBody as SecretText<R> | undefined : undefined
  }
}

const BODY: PropertyDescriptor = {
  get(this: SecretBodyRequest<unknown>) {
    return this[SECRET_BODY]!.redacted()
  },
  enumerable: true
}

/** The request's body as a {@link SecretText}, when it carries one. */
export const secretBodyOf: <R>(request: object) => SecretText<R> | undefined = SecretBodyRequest.secretBodyOf

/**
 * A data request as the transport gets it: POST, the client's headers, a secret body (see
 * {@link SecretBodyRequest}), the response's size bound and the attempt's timeout. A class, not an
 * object literal, for the garbage collector's sake (docs/architecture.md, "Objects made per call").
 */
export class DataRequest<R> extends SecretBodyRequest<R> {
  readonly method = "POST" as const
  declare readonly body: R
  constructor(
    readonly url: string,
    readonly headers: Readonly<Record<string, string | R>>,
    secretBody: SecretText<R>,
    readonly maxResponseBytes: number,
    readonly timeoutMillis: number
  ) {
    super(secretBody)
  }
}
