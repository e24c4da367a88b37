// `npm run mutate:transport`: the transport's interpreters (what undici is given: routes, tunnels,
// trust, client certificates; how a connection's failure is read) against the tests that drive them
// in process, through real TLS and a real tinyproxy.
import base from "./stryker.config.mjs"

export default {
  ...base,
  vitest: { configFile: "vitest.mutate-transport.config.ts" },
  mutate: [
    "src/internal/transport/network.ts",
    "core/transport/proxy.ts",
    "core/transport/trust.ts",
    "core/transport/connectFailure.ts",
    "core/transport/failures.ts",
    "core/transport/message.ts",
    "core/transport/network.ts",
    "core/transport/platformResponse.ts",
    "core/transport/undiciExchange.ts",
    "core/transport/dispatchPairs.ts"
  ],
  htmlReporter: { fileName: "reports/mutation-transport/index.html" },
  jsonReporter: { fileName: "reports/mutation-transport/mutation.json" },
  incrementalFile: "reports/stryker-incremental-transport.json"
}
