/**
 * `--import` this (with `--allow-natives-syntax`) before the program to probe: registers the hooks
 * and counts, for every literal, how many of its objects were allocated in the young generation
 * and how many in the old (pretenured). Prints the sites with old allocations at exit, after the
 * first PROBE_SKIP literals (the warm-up). See docs/architecture.md.
 */
import { register } from "node:module"

register("./hooks.mjs", import.meta.url)

const inYoungGeneration = new Function("o", "return %InYoungGeneration(o)")
const skip = Number(process.env.PROBE_SKIP ?? 500_000)
const counts = new Map()
let seen = 0
globalThis.__literal = (label, value) => {
  if (++seen > skip) {
    let count = counts.get(label)
    if (count === undefined) counts.set(label, count = { young: 0, old: 0 })
    if (inYoungGeneration(value)) count.young++
    else count.old++
  }
  return value
}
process.on("exit", () => {
  const pretenured = [...counts].filter(([, count]) => count.old > count.young / 10).sort((a, b) => b[1].old - a[1].old)
  console.error(`literals probed after the first ${skip}: ${Math.max(0, seen - skip)}`)
  console.error(`allocation sites mostly in the old generation (pretenured): ${pretenured.length}`)
  for (const [label, { old, young }] of pretenured) console.error(`  ${label}: ${old} old, ${young} young`)
})
