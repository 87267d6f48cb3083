// Builds the hosted page's scripts from npm packages, committed so serving
// needs no Node (.ci/run builds them again and compares):
// - src/formsapi/hosted/static/logic.js: json-logic-js and our operators,
//   one file the hosted page loads (no bundler needed: both are UMD).
// - altcha.js, altcha-worker.js, altcha.css: the ALTCHA widget of a form
//   that asks for a proof of work, in its build for a strict
//   Content-Security-Policy (no inline style, no worker from a blob): its
//   SHA-256 worker loaded from a file of ours beside it.
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const versionOf = (name) =>
  JSON.parse(readFileSync(join(packageDir(name), "package.json"), "utf8")).version;
// node_modules/NAME: altcha's exports map leaves out its package.json.
const packageDir = (name) => join(dirname(fileURLToPath(import.meta.url)), "node_modules", name);
const out = (name) => new URL(`../src/formsapi/hosted/static/${name}`, import.meta.url);

const library = readFileSync(require.resolve("json-logic-js/logic.js"), "utf8");
const ours = readFileSync(new URL("./operations.js", import.meta.url), "utf8");
writeFileSync(
  out("logic.js"),
  `/* Built by frontend/build.mjs: json-logic-js ${versionOf("json-logic-js")} (MIT) and formsapi's operators. */\n` +
    `${library}\n${ours}`,
);

const altcha = packageDir("altcha");
const banner = `/* Built by frontend/build.mjs: altcha ${versionOf("altcha")} (MIT). */\n`;
writeFileSync(
  out("altcha.js"),
  banner +
    readFileSync(join(altcha, "dist/external/altcha.min.js"), "utf8") +
    "\n// formsapi: the one algorithm its challenges use, solved in a worker file of ours.\n" +
    'globalThis.$altcha.algorithms.set("SHA-256", () => new Worker(new URL("altcha-worker.js", import.meta.url)));\n',
);
writeFileSync(out("altcha-worker.js"), banner + readFileSync(join(altcha, "dist/workers/sha.js"), "utf8"));
writeFileSync(out("altcha.css"), banner + readFileSync(join(altcha, "dist/external/altcha.css"), "utf8"));
