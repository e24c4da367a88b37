#!/usr/bin/env node
/**
 * The `effect-clinical` executable. `npm run build` bundles it (scripts/bundle-cli.mjs) into
 * dist/bin/, the package's `bin`: the command line carries its dependencies and runs without the
 * library's peers installed. What runs here comes before anything else loads.
 */
import * as v8 from "node:v8"

// undici parses HTTP with WebAssembly (llhttp). V8 compiles it twice: at once with its baseline
// compiler, then optimised in the background, and a process cannot exit before that second compile
// ends: about 170 ms and 30 MiB of a short command's life, for a parser that reads a few responses.
// The long-running commands keep the optimised parser (docs/benchmarks.md, start-up).
if (!process.argv.slice(2).some((arg) => arg === "batch" || arg === "mock-server")) {
  v8.setFlagsFromString("--liftoff-only")
}

// Maps the bundle's lines back to src/ in the stacks CLINICAL_STACK=1 prints (off otherwise: a
// stack with maps costs time to read them).
if (process.env.CLINICAL_STACK === "1") process.setSourceMapsEnabled(true)

await import("./main.js")
