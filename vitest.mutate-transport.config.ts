/** The tests `npm run mutate:transport` runs against each mutant (stryker.transport.config.mjs). */
import mutate from "./vitest.mutate.config.js"

export default {
  ...mutate,
  test: {
    ...mutate.test,
    include: [
      "test/NetworkRules*.test.ts",
      "test/Network[A-Z]*.test.ts",
      "test/HttpTransport.test.ts",
      "test/Arguments.test.ts",
      "test/Promise*.test.ts",
      // The undici exchange and the platform response on the common and Effect paths, over loopback.
      "test/CommonPath.test.ts"
    ]
  }
}
