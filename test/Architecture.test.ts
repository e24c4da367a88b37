/**
 * The layout's rules, checked on the sources: core/ free of Effect and of either line's shell (it
 * is compiled into both Effect lines); src/internal/ in folders by concern; no module
 * imports itself back through others, types included (issue 24: `HttpTransport` <->
 * `internal/secretText`, `TokenStore` <-> `internal/redisTokenStore` were circles); no function
 * longer than a screenful.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import ts from "typescript"
import { describe, expect, it } from "vitest"

const SRC = Path.resolve(import.meta.dirname, "../src")
const CORE = Path.resolve(import.meta.dirname, "../core")
const EFFECT4 = Path.resolve(import.meta.dirname, "../effect4/src")

const modules = (directory: string): Array<string> =>
  Fs.readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = Path.join(directory, entry.name)
    return entry.isDirectory() ? modules(path) : entry.name.endsWith(".ts") ? [path] : []
  })

/** Each module's relative imports and re-exports (`import type` too), as module paths. */
const importGraph = (): Map<string, Array<string>> =>
  new Map(
    [...modules(CORE), ...modules(SRC), ...modules(EFFECT4)].map((file) => {
      const text = Fs.readFileSync(file, "utf8")
      const targets = [...text.matchAll(/\bfrom\s+"(\.{1,2}\/[^"]+)"/g)].map(([, specifier]) =>
        Path.resolve(Path.dirname(file), specifier!.replace(/\.js$/, ".ts"))
      )
      return [file, targets]
    })
  )

/** Every circle of the graph, each once, as the modules along it. */
export const circles = (graph: ReadonlyMap<string, ReadonlyArray<string>>): Array<Array<string>> => {
  const found = new Map<string, Array<string>>()
  const visit = (node: string, path: Array<string>, seen: Set<string>) => {
    for (const next of graph.get(node) ?? []) {
      const at = path.indexOf(next)
      if (at >= 0) {
        const circle = path.slice(at)
        found.set([...circle].sort().join(" "), circle)
      } else if (!seen.has(next)) {
        seen.add(next)
        visit(next, [...path, next], seen)
      }
    }
  }
  for (const node of graph.keys()) visit(node, [node], new Set([node]))
  return [...found.values()]
}

/** The longest a function may be, in lines from its first to its last (nested functions included). */
const MAX_FUNCTION_LINES = 120

/** Every function of a source text (declarations, expressions, arrows, methods, accessors) longer than `max` lines. */
export const longFunctions = (name: string, text: string, max: number): Array<string> => {
  const source = ts.createSourceFile(name, text, ts.ScriptTarget.Latest, true)
  const found: Array<string> = []
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && "body" in node && node.body !== undefined) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line
      if (last - first + 1 > max) found.push(`${name}:${first + 1} (${last - first + 1} lines)`)
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

/** Every module a source text names (imports, `import type`, re-exports, dynamic imports). */
const specifiersIn = (text: string): Array<string> =>
  ts.preProcessFile(text, true, true).importedFiles.map((file) => file.fileName)

/**
 * The packages a core module may import types of (never values): undici, which each line depends
 * on and hands to the core's network (core/transport/network.ts) when a transport is built.
 */
const TYPES_ONLY = new Set(["undici"])

/** The packages a text imports as values (any import but `import type`), by specifier. */
const valueImports = (text: string): Set<string> =>
  new Set(
    [...text.matchAll(/^\s*(import|export)\s+(?!type\b)[^;]*?from\s+"([^"]+)"|import\(\s*"([^"]+)"\s*\)/gm)]
      .map((match) => match[2] ?? match[3]!)
  )

/**
 * What a core module imports that a core module may not: anything but Node's own modules, other
 * core modules and the types of {@link TYPES_ONLY} (no Effect, no package's code, nothing of
 * either line's shell).
 */
export const outsideCore = (file: string, text: string, core: string): Array<string> => {
  const values = valueImports(text)
  return specifiersIn(text)
    .filter((specifier) =>
      specifier.startsWith(".")
        ? !Path.resolve(Path.dirname(file), specifier).startsWith(core + Path.sep)
        : !specifier.startsWith("node:") && !(TYPES_ONLY.has(specifier) && !values.has(specifier))
    )
    .map((specifier) => `${Path.relative(core, file)} imports ${specifier}`)
}

describe("core/: one Effect-free core for both Effect lines", () => {
  it("finds what a core module may not import (the check itself)", () => {
    const file = "/repo/core/call/a.ts"
    const text = [
      "import * as Option from \"effect/Option\"",
      "import type { Duration } from \"effect\"",
      "export * from \"@effect/platform\"",
      "const undici = await import(\"undici\")",
      "import { x } from \"../../src/internal/x.js\"",
      "import { y } from \"../y.js\"",
      "import { z } from \"./z.js\"",
      "import * as Fs from \"node:fs\""
    ].join("\n")
    expect(outsideCore(file, text, "/repo/core")).toEqual([
      "call/a.ts imports effect/Option",
      "call/a.ts imports effect",
      "call/a.ts imports @effect/platform",
      "call/a.ts imports undici",
      "call/a.ts imports ../../src/internal/x.js"
    ])
    // undici's types alone, never its code.
    expect(
      outsideCore(
        file,
        "import type * as Undici from \"undici\"\nimport type { Dispatcher } from \"undici\"",
        "/repo/core"
      )
    )
      .toEqual([])
    expect(outsideCore(file, "import { Agent } from \"undici\"", "/repo/core")).toEqual(["call/a.ts imports undici"])
  })

  it("no module of core/ imports Effect, a package, or anything outside core/", () => {
    const found = modules(CORE)
    expect(found.length).toBeGreaterThan(10)
    expect(found.flatMap((file) => outsideCore(file, Fs.readFileSync(file, "utf8"), CORE))).toEqual([])
  })

  it("every module of core/ is mutated by one of the mutation runs (npm run mutate, mutate:transport, mutate:queue)", async () => {
    const ROOT = Path.dirname(CORE)
    const lists = await Promise.all(
      ["stryker.config.mjs", "stryker.transport.config.mjs", "stryker.queue.config.mjs"].map(async (name) =>
        ((await import(Path.join(ROOT, name))).default as { mutate: ReadonlyArray<string> }).mutate
      )
    )
    const mutated = new Set(lists.flat())
    const unmutated = modules(CORE).map((file) => Path.relative(ROOT, file)).filter((file) => !mutated.has(file))
    expect(unmutated).toEqual([])
  })
})

/** The packages of Effect 3's ecosystem alone: the Effect 4 line has them in `effect` itself, or not at all. */
const EFFECT3_ONLY =
  /^@effect\/(platform|platform-node|cli|opentelemetry|printer|printer-ansi|experimental|vitest)(\/|$)/

/**
 * What a module of one line's shell imports of the other's: its sources, or (for the Effect 4 line)
 * a package of Effect 3's ecosystem alone. Each line is a package of its own, over the core alone.
 */
export const acrossLines = (file: string, text: string, own: string, other: string): Array<string> =>
  specifiersIn(text)
    .filter((specifier) =>
      specifier.startsWith(".")
        ? Path.resolve(Path.dirname(file), specifier).startsWith(other + Path.sep)
        : own === EFFECT4 && EFFECT3_ONLY.test(specifier)
    )
    .map((specifier) => `${Path.relative(Path.dirname(SRC), file)} imports ${specifier}`)

describe("two Effect lines over one core: neither shell reaches into the other", () => {
  it("finds what a shell module may not import (the check itself)", () => {
    const text = [
      "import * as Effect from \"effect/Effect\"",
      "import * as HttpClient from \"@effect/platform/HttpClient\"",
      "import { x } from \"../../../src/internal/x.js\"",
      "import { y } from \"../../../core/y.js\""
    ].join("\n")
    expect(acrossLines(Path.join(EFFECT4, "a/b.ts"), text, EFFECT4, SRC)).toEqual([
      "effect4/src/a/b.ts imports @effect/platform/HttpClient",
      "effect4/src/a/b.ts imports ../../../src/internal/x.js"
    ])
    expect(acrossLines(Path.join(SRC, "a.ts"), "import { z } from \"../effect4/src/z.js\"", SRC, EFFECT4)).toEqual([
      "src/a.ts imports ../effect4/src/z.js"
    ])
  })

  it("the Effect 4 line imports nothing of the Effect 3 line, and the Effect 3 line nothing of the Effect 4 line", () => {
    const found = [
      ...modules(EFFECT4).flatMap((file) => acrossLines(file, Fs.readFileSync(file, "utf8"), EFFECT4, SRC)),
      ...modules(SRC).flatMap((file) => acrossLines(file, Fs.readFileSync(file, "utf8"), SRC, EFFECT4))
    ]
    expect(modules(EFFECT4).length).toBeGreaterThan(2)
    expect(found).toEqual([])
  })
})

describe("the layout of src/, core/ and effect4/src/", () => {
  it("finds a function longer than the limit (the check itself)", () => {
    const body = (lines: number) => Array.from({ length: lines - 2 }, (_, i) => `  const x${i} = ${i}`).join("\n")
    const text = `export const f = () => {\n${body(5)}\n}\nclass C {\n  m() {\n${body(4)}\n  }\n}\n`
    expect(longFunctions("a.ts", text, 4)).toEqual(["a.ts:1 (5 lines)"])
    expect(longFunctions("a.ts", text, 5)).toEqual([])
    expect(longFunctions("b.ts", `function* g() {\n${body(6)}\n}\n`, 5)).toEqual(["b.ts:1 (6 lines)"])
  })

  it(`no function in src/, core/ or effect4/src/ is longer than ${MAX_FUNCTION_LINES} lines`, () => {
    const long = [...modules(CORE), ...modules(SRC), ...modules(EFFECT4)].flatMap((file) =>
      longFunctions(Path.relative(Path.dirname(SRC), file), Fs.readFileSync(file, "utf8"), MAX_FUNCTION_LINES)
    )
    expect(long).toEqual([])
  })

  it("finds a circle where there is one (the check itself)", () => {
    const graph = new Map([["a", ["b"]], ["b", ["c"]], ["c", ["a"]], ["d", ["a"]]])
    expect(circles(graph)).toEqual([["a", "b", "c"]])
    expect(circles(new Map([["a", ["b"]], ["b", []]]))).toEqual([])
  })

  it("src/internal/ holds at most 8 modules directly: the rest in a folder per concern", () => {
    const direct = Fs.readdirSync(Path.join(SRC, "internal")).filter((name) => name.endsWith(".ts"))
    expect(direct.length, direct.join(", ")).toBeLessThanOrEqual(8)
  })

  it("no module imports itself back through others, types included", () => {
    const graph = importGraph()
    expect(graph.size).toBeGreaterThan(40)
    const shown = circles(graph).map((circle) =>
      circle.map((file) => Path.relative(Path.dirname(SRC), file)).join(" -> ")
    )
    expect(shown).toEqual([])
  })
})
