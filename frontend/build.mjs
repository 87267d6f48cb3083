// Builds src/formsapi/hosted/static/logic.js: json-logic-js and our
// operators, one file the hosted page loads (no bundler needed: both are UMD).
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const library = readFileSync(require.resolve("json-logic-js/logic.js"), "utf8");
const ours = readFileSync(new URL("./operations.js", import.meta.url), "utf8");
const version = JSON.parse(
  readFileSync(require.resolve("json-logic-js/package.json"), "utf8"),
).version;
const out = new URL("../src/formsapi/hosted/static/logic.js", import.meta.url);
writeFileSync(
  out,
  `/* Built by frontend/build.mjs: json-logic-js ${version} (MIT) and formsapi's operators. */\n` +
    `${library}\n${ours}`,
);
