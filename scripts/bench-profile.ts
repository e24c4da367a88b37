/**
 * `npm run bench:profile [-- --kinds library-undici,raw-undici] [-- --concurrency 32] [-- --calls 20000]`:
 * where a call's CPU goes. Each client makes its calls against the benchmark's loopback server in
 * a process of its own, with a CPU profile of the timed calls only (`BENCH_CPU_PROFILE`), and the
 * profile's samples are summed by where the code lives: microseconds per call for each part.
 * Sampling is statistical: parts under a microsecond are within its noise.
 */
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { option } from "./bench/args.js"
import type { Kind } from "./bench/client.js"
import { runMeasurement, startServer } from "./bench/processes.js"

const kinds = option("--kinds", "library-undici,library-undici-traced,raw-undici").split(",") as Array<Kind>
const concurrency = Number(option("--concurrency", "32"))
const calls = Number(option("--calls", "20000"))

interface ProfileNode {
  readonly id: number
  readonly callFrame: { readonly functionName: string; readonly url: string }
}
interface Profile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

/** The part of the program a function belongs to, by its file (and a few functions by name). */
const partOf = ({ functionName, url }: ProfileNode["callFrame"]): string | undefined => {
  if (functionName === "(idle)") return undefined
  if (functionName === "(garbage collector)") return "garbage collection"
  if (url.includes("/dist/core/json.js") && functionName === "parse") return "JSON.parse of the answer"
  if (url.includes("/dist/core/json.js")) return "library: reading the answer (depth, fields)"
  if (
    url.includes("/dist/src/internal/observability/httpSpan.js") ||
    url.includes("/dist/src/internal/observability/fiberSpan.js")
  ) {
    return "library: spans and the duration histogram"
  }
  if (url.includes("/dist/src/HttpTransport.js")) return "library: the undici transport (its handler)"
  if (/\/dist\/(src|core)\//.test(url) && !url.includes("/node_modules/")) {
    return "library: the rest (the call, its checks, its result)"
  }
  if (url.includes("/effect/dist/esm/internal/tracer.js")) return "Effect: its tracer's spans"
  if (url.includes("/effect/")) return "Effect: the runtime (fibers, operations)"
  if (url.includes("/undici/lib/api/")) return "undici: request() (streams, promises)"
  if (url.includes("/undici/")) return "undici: dispatch, HTTP/1.1 parsing"
  if (url.includes("/scripts/bench/")) return "the benchmark's own loop"
  if (functionName === "parse" && url === "") return "JSON.parse of the answer"
  return "Node: sockets, timers, buffers, microtasks"
}

const attribute = (profile: Profile, count: number): Map<string, number> => {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const parts = new Map<string, number>()
  profile.samples.forEach((id, i) => {
    const part = partOf(byId.get(id)!.callFrame)
    if (part !== undefined) parts.set(part, (parts.get(part) ?? 0) + (profile.timeDeltas[i] ?? 0) / count)
  })
  return parts
}

execFileSync("npx", ["tsc", "-p", "tsconfig.build.json"], { stdio: "inherit" })
const server = await startServer()
const directory = Fs.mkdtempSync(Path.join(Os.tmpdir(), "bench-profile-"))
const tables = new Map<Kind, Map<string, number>>()
try {
  for (const kind of kinds) {
    const file = Path.join(directory, `${kind}.cpuprofile`)
    await runMeasurement("scripts/bench/client.ts", [kind, server.url, String(calls), String(concurrency)], {
      BENCH_CPU_PROFILE: file
    })
    tables.set(kind, attribute(JSON.parse(Fs.readFileSync(file, "utf8")) as Profile, calls))
  }
} finally {
  server.stop()
  Fs.rmSync(directory, { recursive: true, force: true })
}

const parts = [...new Set([...tables.values()].flatMap((table) => [...table.keys()]))].sort()
console.log(`\nCPU per call by part, us (sampled), ${calls} calls at concurrency ${concurrency}\n`)
console.log(`| part | ${kinds.join(" | ")} |`)
console.log(`|---|${kinds.map(() => "---:").join("|")}|`)
for (const part of parts) {
  console.log(`| ${part} | ${kinds.map((kind) => (tables.get(kind)!.get(part) ?? 0).toFixed(1)).join(" | ")} |`)
}
const totals = kinds.map((kind) => [...tables.get(kind)!.values()].reduce((sum, value) => sum + value, 0).toFixed(1))
console.log(`| **all, idle excluded** | ${totals.join(" | ")} |`)
