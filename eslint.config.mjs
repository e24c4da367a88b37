import * as effectEslint from "@effect/eslint-plugin"
import tseslint from "typescript-eslint"

const barrels = ["effect", "@effect/platform", "@effect/platform-node", "@effect/cli", "@effect/experimental"]

export default tseslint.config(
  {
    ignores: [
      ".scratch/**",
      ".stryker-tmp/**",
      "reports/**",
      "**/dist/**",
      "**/node_modules/**",
      "coverage/**",
      ".ci/**"
    ]
  },
  ...tseslint.configs.recommended,
  ...effectEslint.configs.dprint,
  {
    languageOptions: { parser: tseslint.parser },
    rules: {
      "@effect/dprint": ["error", {
        config: {
          indentWidth: 2,
          lineWidth: 120,
          semiColons: "asi",
          quoteStyle: "alwaysDouble",
          trailingCommas: "never",
          operatorPosition: "maintain",
          "arrowFunction.useParentheses": "force"
        }
      }],
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/no-namespace": "off",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/array-type": ["error", { default: "generic", readonly: "generic" }],
      // A skipped test left in is a defect.
      "no-restricted-properties": [
        "error",
        { object: "it", property: "skip", message: "Do not land skipped tests." },
        {
          object: "describe",
          property: "skip",
          message: "Do not land skipped tests."
        },
        { object: "it", property: "todo", message: "Do not land placeholder tests." },
        ...["it", "describe"].flatMap((
          object
        ) =>
          ["skipIf", "runIf"].map((property) => ({
            object,
            property,
            message: "A test fails when a part is missing (scripts/test-parts.mjs installs it); it never skips itself."
          }))
        )
      ]
    }
  },
  {
    // The library and the command line import Effect's modules one by one: a barrel loads every
    // module of its package, which measured slower at start-up (docs/benchmarks.md).
    files: ["src/**/*.ts", "core/**/*.ts"],
    rules: {
      "no-restricted-imports": ["error", {
        paths: barrels.map((name) => ({ name, message: `Import ${name}/<Module>, not the barrel.` }))
      }]
    }
  }
)
