/**
 * `node dist/src/main.js` (and `npm start`): the same as `topwagers serve` (cli/serve.ts), so
 * `--help` and `--version` answer here too without listening.
 */
import { main } from "./cli/main.js";
import { isEntryPoint } from "./entry.js";

if (isEntryPoint(import.meta.url)) void main(["serve", ...process.argv.slice(2)]);
