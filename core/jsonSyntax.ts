/**
 * Whether bytes are one whole JSON value, checked as they stream past: no text is decoded and no
 * value is built, so a line of any length is checked in constant memory (its nesting aside, which
 * is bounded). `collect` reads every results line with it: a line cut by a full disk, or two
 * lines glued into one, is refused here however it starts.
 */

/** Deepest nesting accepted: a line deeper than this is not one we wrote. */
export const MAX_NESTING = 10_000

const enum State {
  /** A value must come (whitespace first). */
  Value,
  /** After `[`: a value or `]`. */
  ValueOrClose,
  /** After `{`: a key or `}`. */
  KeyOrClose,
  /** After `,` in an object: a key. */
  Key,
  /** After a key: `:`. */
  Colon,
  /** After a value: `,` or the container's close, or nothing but whitespace at the top. */
  AfterValue,
  InString,
  InEscape,
  /** Inside `\u`: the hex digits still wanted are in {@link JsonSyntax.pending}. */
  InUnicode,
  /** After `-`: a digit. */
  Minus,
  /** After a leading `0`: `.`, `e` or the end of the number. */
  Zero,
  IntegerDigits,
  /** After `.`: a digit. */
  Dot,
  FractionDigits,
  /** After `e`: a sign or a digit. */
  Exponent,
  /** After the exponent's sign: a digit. */
  ExponentSign,
  ExponentDigits,
  /** Inside `true`, `false` or `null`: the letters still wanted are in {@link JsonSyntax.literal}. */
  Literal,
  Invalid
}

const isDigit = (byte: number): boolean => byte >= 0x30 && byte <= 0x39
const isSpace = (byte: number): boolean => byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d
const isHex = (byte: number): boolean =>
  isDigit(byte) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)

/** Whether a byte is one of the string escapes `\" \\ \/ \b \f \n \r \t` (after the backslash). */
const isEscape = (byte: number): boolean =>
  byte === 0x22 || byte === 0x5c || byte === 0x2f || byte === 0x62 || byte === 0x66 || byte === 0x6e ||
  byte === 0x72 || byte === 0x74

const TRUE = Buffer.from("true")
const FALSE = Buffer.from("false")
const NULL = Buffer.from("null")

/** A checker of one JSON value: fed its bytes in any number of pieces, then asked whether they were whole. */
export class JsonSyntax {
  private state = State.Value
  /** Open containers, innermost last: 1 an object, 2 an array. */
  private containers = new Uint8Array(64)
  private depth = 0
  /** Whether the string being read is an object's key (a `:` follows it). */
  private inKey = false
  private pending = 0
  private literal: Buffer = NULL
  private literalAt = 0

  /** Reads `bytes[start, end)`; false once they can no longer be the start of one JSON value. */
  feed(bytes: Uint8Array, start = 0, end = bytes.length): boolean {
    for (let i = start; i < end; i++) {
      const byte = bytes[i]!
      switch (this.state) {
        case State.InString: {
          // The common case, a run of plain characters, stays in this loop.
          let at = i
          while (at < end) {
            const c = bytes[at]!
            if (c === 0x22 || c === 0x5c || c < 0x20) break
            at++
          }
          if (at === end) return true
          i = at
          const c = bytes[at]!
          if (c === 0x5c) this.state = State.InEscape
          else if (c === 0x22) this.state = this.inKey ? State.Colon : State.AfterValue
          else return this.fail()
          break
        }
        case State.InEscape:
          if (byte === 0x75) {
            this.state = State.InUnicode
            this.pending = 4
          } else if (isEscape(byte)) this.state = State.InString
          else return this.fail()
          break
        case State.InUnicode:
          if (!isHex(byte)) return this.fail()
          if (--this.pending === 0) this.state = State.InString
          break
        case State.Value:
        case State.ValueOrClose:
          if (isSpace(byte)) break
          if (this.state === State.ValueOrClose && byte === 0x5d) {
            this.state = this.closeContainer()
            break
          }
          if (!this.startValue(byte)) return this.fail()
          break
        case State.KeyOrClose:
        case State.Key:
          if (isSpace(byte)) break
          if (byte === 0x22) {
            this.state = State.InString
            this.inKey = true
          } else if (byte === 0x7d && this.state === State.KeyOrClose) this.state = this.closeContainer()
          else return this.fail()
          break
        case State.Colon:
          if (isSpace(byte)) break
          if (byte !== 0x3a) return this.fail()
          this.state = State.Value
          break
        case State.AfterValue:
          if (!this.afterValue(byte)) return this.fail()
          break
        case State.Minus:
          if (byte === 0x30) this.state = State.Zero
          else if (isDigit(byte)) this.state = State.IntegerDigits
          else return this.fail()
          break
        case State.Zero:
        case State.IntegerDigits:
          if (isDigit(byte) && this.state === State.IntegerDigits) break
          if (byte === 0x2e) this.state = State.Dot
          else if (byte === 0x65 || byte === 0x45) this.state = State.Exponent
          else if (!this.endNumber(byte)) return this.fail()
          break
        case State.Dot:
          if (!isDigit(byte)) return this.fail()
          this.state = State.FractionDigits
          break
        case State.FractionDigits:
          if (isDigit(byte)) break
          if (byte === 0x65 || byte === 0x45) this.state = State.Exponent
          else if (!this.endNumber(byte)) return this.fail()
          break
        case State.Exponent:
          if (byte === 0x2b || byte === 0x2d) this.state = State.ExponentSign
          else if (isDigit(byte)) this.state = State.ExponentDigits
          else return this.fail()
          break
        case State.ExponentSign:
          if (!isDigit(byte)) return this.fail()
          this.state = State.ExponentDigits
          break
        case State.ExponentDigits:
          if (isDigit(byte)) break
          if (!this.endNumber(byte)) return this.fail()
          break
        case State.Literal:
          if (byte !== this.literal[this.literalAt]) return this.fail()
          if (++this.literalAt === this.literal.length) this.state = State.AfterValue
          break
        case State.Invalid:
          return false
      }
    }
    return this.state !== State.Invalid
  }

  /** Whether everything fed was exactly one JSON value (whitespace around it aside). */
  end(): boolean {
    const state = this.state
    const numberEnds = state === State.Zero || state === State.IntegerDigits || state === State.FractionDigits ||
      state === State.ExponentDigits
    return this.depth === 0 && (state === State.AfterValue || numberEnds)
  }

  private fail(): false {
    this.state = State.Invalid
    return false
  }

  /** The first byte of a value (not whitespace): whether one can start with it. */
  private startValue(byte: number): boolean {
    switch (byte) {
      case 0x7b:
        this.state = State.KeyOrClose
        return this.open(1)
      case 0x5b:
        this.state = State.ValueOrClose
        return this.open(2)
      case 0x22:
        this.state = State.InString
        this.inKey = false
        return true
      case 0x2d:
        this.state = State.Minus
        return true
      case 0x30:
        this.state = State.Zero
        return true
      case 0x74:
        return this.startLiteral(TRUE)
      case 0x66:
        return this.startLiteral(FALSE)
      case 0x6e:
        return this.startLiteral(NULL)
      default:
        if (!isDigit(byte)) return false
        this.state = State.IntegerDigits
        return true
    }
  }

  private startLiteral(literal: Buffer): true {
    this.state = State.Literal
    this.literal = literal
    this.literalAt = 1
    return true
  }

  /** A number ended at `byte`, which belongs to what follows it. */
  private endNumber(byte: number): boolean {
    this.state = State.AfterValue
    return this.afterValue(byte)
  }

  /** The byte after a whole value. */
  private afterValue(byte: number): boolean {
    if (isSpace(byte)) return true
    const inside = this.depth === 0 ? 0 : this.containers[this.depth - 1]
    if (byte === 0x2c && inside !== 0) {
      this.state = inside === 1 ? State.Key : State.Value
      return true
    }
    if ((byte === 0x7d && inside === 1) || (byte === 0x5d && inside === 2)) {
      this.state = this.closeContainer()
      return true
    }
    return false
  }

  private open(kind: 1 | 2): boolean {
    if (this.depth === MAX_NESTING) return false
    if (this.depth === this.containers.length) {
      const grown = new Uint8Array(this.containers.length * 2)
      grown.set(this.containers)
      this.containers = grown
    }
    this.containers[this.depth++] = kind
    return true
  }

  private closeContainer(): State {
    this.depth--
    return State.AfterValue
  }
}

/** Whether `bytes[start, end)` is exactly one JSON value. */
export const isJson = (bytes: Uint8Array, start = 0, end = bytes.length): boolean => {
  const syntax = new JsonSyntax()
  return syntax.feed(bytes, start, end) && syntax.end()
}
