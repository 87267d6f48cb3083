// Evaluates rules as the browser does: reads [{rule, data}] cases as JSON on
// stdin, writes their results as JSON (NaN and infinities spelled out).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const jsonLogic = require("json-logic-js");
const ours = require("./operations.js")(jsonLogic, null);
const { today, cases } = JSON.parse(readFileSync(0, "utf8"));
ours.setToday(today);

function spelled(value) {
  if (typeof value === "number" && !Number.isFinite(value)) return { number: String(value) };
  if (Array.isArray(value)) return value.map(spelled);
  return value === undefined ? null : value;
}

const results = cases.map(({ rule, data }) => {
  try {
    return { value: spelled(jsonLogic.apply(rule, data)) };
  } catch (error) {
    return { error: String(error) };
  }
});
process.stdout.write(JSON.stringify(results));
