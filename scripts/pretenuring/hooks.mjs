/**
 * Module hooks for `npm run bench:pretenuring`: every object and array literal in the library's
 * compiled code (dist/) and in Effect's becomes `__literal("file:line", <literal>)`, so that the
 * probe can ask V8 where each one was allocated. Loaded by register.mjs; never part of the package.
 */
import ts from "typescript"

const INSTRUMENTED = [
  new URL("../../dist/", import.meta.url).href,
  new URL("../../node_modules/effect/dist/esm/", import.meta.url).href
]

/** True when `node` is (part of) the target of a destructuring assignment: wrapping it would break the code. */
const isAssignmentTarget = (node) => {
  let current = node
  while (
    ts.isArrayLiteralExpression(current.parent) || ts.isObjectLiteralExpression(current.parent) ||
    ts.isPropertyAssignment(current.parent) || ts.isShorthandPropertyAssignment(current.parent) ||
    ts.isSpreadElement(current.parent) || ts.isSpreadAssignment(current.parent) ||
    ts.isParenthesizedExpression(current.parent)
  ) current = current.parent
  const parent = current.parent
  return (ts.isBinaryExpression(parent) && parent.operatorToken.kind === ts.SyntaxKind.EqualsToken &&
    parent.left === current) ||
    ((ts.isForOfStatement(parent) || ts.isForInStatement(parent)) && parent.initializer === current)
}

const instrument = (source, url) => {
  const name = url.includes("/node_modules/")
    ? url.replace(/.*\/node_modules\//, "")
    : url.replace(/.*\/dist\//, "dist/")
  const file = ts.createSourceFile(url, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS)
  const transformer = (context) => (root) => {
    const visit = (node) => {
      const literal = (ts.isObjectLiteralExpression(node) || ts.isArrayLiteralExpression(node)) &&
        !isAssignmentTarget(node)
      const label = literal ? `${name}:${file.getLineAndCharacterOfPosition(node.getStart()).line + 1}` : ""
      const visited = ts.visitEachChild(node, visit, context)
      return literal
        ? context.factory.createCallExpression(context.factory.createIdentifier("__literal"), undefined, [
          context.factory.createStringLiteral(label),
          visited
        ])
        : visited
    }
    return ts.visitNode(root, visit)
  }
  const result = ts.transform(file, [transformer])
  return ts.createPrinter().printFile(result.transformed[0])
}

export const load = async (url, context, nextLoad) => {
  const loaded = await nextLoad(url, context)
  if (loaded.format !== "module" || !INSTRUMENTED.some((root) => url.startsWith(root))) return loaded
  return { ...loaded, source: instrument(String(loaded.source), url) }
}
