// Counts the o200k_base tokens of every JSON string line of a file with npm tiktoken, the WASM
// build of OpenAI's tokenizer, and prints the total. The Go side is bench -count-file.
import { readFileSync } from "node:fs";
import { get_encoding } from "tiktoken";

const enc = get_encoding("o200k_base");
let total = 0;
for (const line of readFileSync(process.argv[2], "utf8").split("\n")) {
  if (line.length === 0) continue;
  total += enc.encode_ordinary(JSON.parse(line)).length;
}
enc.free();
console.log(total);
