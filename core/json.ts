/**
 * Reading JSON that a server (or a user) wrote: parsing without throwing, looking fields up the way
 * ASP.NET writes them, and handling values of any depth or size without ever recursing into them
 * without bound (a 100,000-level array parses fine, but `JSON.stringify` or a recursive walk of it
 * overflows the stack).
 */

/** A plain JSON object (not null, not an array). */
export const isRecord = (u: unknown): u is { readonly [key: string]: unknown } =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/** A JSON text's value (`null` among them). */
export interface Parsed {
  readonly value: unknown
}

/**
 * The parsed value, or `undefined` when `text` is not JSON. A leading byte-order mark is allowed (some
 * .NET servers write one; fetch drops it, a raw socket does not). V8's `JSON.parse` is iterative:
 * depth cannot crash it.
 */
export const parse = (text: string | undefined): Parsed | undefined => {
  if (text === undefined) return undefined
  try {
    return { value: JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text) }
  } catch {
    return undefined
  }
}

/** A property by name, exact first, then case-insensitively (the service writes PascalCase). */
export const field = (record: { readonly [key: string]: unknown }, name: string): unknown => {
  if (name in record) return record[name]
  const wanted = name.toLowerCase()
  for (const key in record) {
    if (key.toLowerCase() === wanted) return record[key]
  }
  return undefined
}

/**
 * Deepest nesting of a response the client accepts. The serializers of .NET (System.Text.Json,
 * Json.NET) refuse to read deeper than 64 levels by default, and no documented payload comes close;
 * a deeper body is refused rather than handed to code (ours, a Schema, the user's) that recurses.
 */
export const MAX_DEPTH = 64

/**
 * True when `value` nests objects or arrays more than `max` levels deep; stops at the first such
 * path. It recurses, but never more than `max` levels (it looks no deeper than that), so a value
 * of any depth is safe; `max` is the caller's small bound ({@link MAX_DEPTH}). It runs on every
 * answer: recursion with no stack of its own is four times faster than an explicit stack.
 */
export const deeperThan = (value: unknown, max: number): boolean =>
  typeof value === "object" && value !== null && (max < 1 || nestsDeeper(value, max - 1))

/** True when some object or array inside `node` lies more than `remaining` levels below it. */
const nestsDeeper = (node: object, remaining: number): boolean => {
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) {
      if (deeperChild(node[i], remaining)) return true
    }
    return false
  }
  for (const key in node) {
    if (deeperChild((node as { readonly [key: string]: unknown })[key], remaining)) return true
  }
  return false
}

const deeperChild = (child: unknown, remaining: number): boolean =>
  typeof child === "object" && child !== null && (remaining < 1 || nestsDeeper(child, remaining - 1))

/** Levels rendered before a nested value is shown as `[...]` or `{...}`. */
const MAX_RENDERED_DEPTH = 8

/**
 * A JSON-like rendering of any value, bounded in depth and cut after `limit` characters, for
 * server text that is not a string (an `ErrorMessage` that is an object, say). Strings are returned
 * as they are. (Whoever keeps it scrubs it first: render past the length you keep.) `text` is applied
 * to every string inside (keys included) before it is escaped: scrubbing there sees a secret in the
 * form the server wrote it, not escaped once more by the rendering.
 */
export const render = (value: unknown, limit = 500, text: (inner: string) => string = (inner) => inner): string => {
  if (typeof value === "string") return value
  let out = ""
  const write = (v: unknown, depth: number): void => {
    if (out.length > limit) return
    if (typeof v !== "object" || v === null) {
      out += typeof v === "string" ? JSON.stringify(text(v)) : String(v)
      return
    }
    const isArray = Array.isArray(v)
    if (depth >= MAX_RENDERED_DEPTH) {
      out += isArray ? "[...]" : "{...}"
      return
    }
    out += isArray ? "[" : "{"
    let first = true
    for (const key in v) {
      if (out.length > limit) break
      if (!first) out += ","
      first = false
      if (!isArray) out += `${JSON.stringify(text(key))}:`
      write((v as { readonly [key: string]: unknown })[key], depth + 1)
    }
    out += isArray ? "]" : "}"
  }
  write(value, 0)
  return out.length > limit ? `${out.slice(0, limit)}...` : out
}
