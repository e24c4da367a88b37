/**
 * Bundles the `effect-clinical` executable into dist/bin/ (part of `npm run build`, after tsc): one
 * ES module with what every command needs, and a chunk per command part loaded with `import()` when
 * that command runs. Node loads a few files instead of some 900 modules, and what no command uses
 * at run time (fast-check behind effect/Schema, yaml and toml behind @effect/cli) is left out.
 * The library's own dist/ stays as tsc writes it. The bundle carries its dependencies, the
 * library's peers included: the command line runs wherever the package is installed.
 */
import * as esbuild from "esbuild"
import * as Fs from "node:fs"
import * as Path from "node:path"

const root = Path.resolve(import.meta.dirname, "..")

/**
 * `node scripts/bundle-cli.mjs [package]`: the executable of the package in `package` (default this
 * one), written into its dist/bin with its version. The Effect 4 line's package carries the same
 * executable (`effect4/`'s build runs this with `effect4`): one bundle, whatever Effect a project has.
 */
const target = Path.resolve(root, process.argv[2] ?? ".")
const { version } = JSON.parse(Fs.readFileSync(Path.join(target, "package.json"), "utf8"))
const outdir = Path.join(target, "dist/bin")

/**
 * The library takes `Agent`, `ProxyAgent`, `Pool` and `Client` alone from undici, whose index (CommonJS, so nothing
 * is shaken off) brings fetch, WebSocket, cookies and caches with it: 1.1 MB where the Agent is
 * 0.47 MB. In the bundle, our "undici" is those four modules of the undici installed here (no
 * exports map keeps them); @effect/platform-node's (the mock server's HTTP client, loaded with
 * mock-server) stays whole.
 */
const undiciAgentOnly = {
  name: "undici-agent-only",
  setup(build) {
    const ours = [Path.join(root, "src") + Path.sep, Path.join(root, "core") + Path.sep]
    build.onResolve(
      { filter: /^undici$/ },
      (args) =>
        ours.some((folder) => args.importer.startsWith(folder))
          ? { path: "undici", namespace: "undici-agent-only" }
          : undefined
    )
    build.onLoad({ filter: /.*/, namespace: "undici-agent-only" }, () => ({
      // ProxyAgent opens its tunnel with the `connect` method undici's index puts on every dispatcher.
      contents: [
        "import Dispatcher from \"undici/lib/dispatcher/dispatcher.js\"",
        "import connect from \"undici/lib/api/api-connect.js\"",
        "Dispatcher.prototype.connect ??= connect",
        "export { default as Agent } from \"undici/lib/dispatcher/agent.js\"",
        "export { default as ProxyAgent } from \"undici/lib/dispatcher/proxy-agent.js\"",
        "export { default as Pool } from \"undici/lib/dispatcher/pool.js\"",
        // Made (never connected) to have undici check the options when the layer is built.
        "export { default as Client } from \"undici/lib/dispatcher/client.js\""
      ].join("\n"),
      resolveDir: root,
      loader: "js"
    }))
  }
}

// Chunks are named by their hashes: an earlier build's would stay beside the new ones.
Fs.rmSync(outdir, { recursive: true, force: true })

await esbuild.build({
  absWorkingDir: root,
  entryPoints: { "effect-clinical": "src/cli/bin.ts" },
  outdir,
  chunkNames: "chunks/[name]-[hash]",
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20.19",
  // Source lines in the stacks CLINICAL_STACK=1 prints (bin.ts turns the maps on then); the sources
  // themselves are not copied in: the package ships src/.
  sourcemap: "linked",
  sourcesContent: false,
  // ws (under the mock server) asks for these native speed-ups in a try/catch: absent, it does without.
  // BullMQ and ioredis are the application's (optional peers), loaded by the queue commands alone.
  // bull-board (its UI a directory of static files) and Express serve `queue dashboard`: the application's too.
  external: ["bufferutil", "utf-8-validate", "bullmq", "ioredis", "@bull-board/*", "express"],
  // Bundled CommonJS packages (undici, ws) call require(): give the ES module one.
  banner: {
    js:
      "import { createRequire as __createRequire } from \"node:module\"; const require = __createRequire(import.meta.url);"
  },
  legalComments: "linked",
  plugins: [undiciAgentOnly],
  define: { __EFFECT_CLINICAL_VERSION__: JSON.stringify(version) },
  logLevel: "warning"
})
