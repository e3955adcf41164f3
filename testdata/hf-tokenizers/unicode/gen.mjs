// Writes unicode.json, the Unicode data tokenizer/hfunicode.go is generated from (go test
// ./tokenizer -run TestHFUnicodeTables -update reads it). Run from this folder after npm ci:
//
//	node gen.mjs
//
// The reference implementation of tokenizer.json (the tokenizers library) matches its split
// patterns with Oniguruma's Unicode 16.0 tables and normalizes with Unicode 9.0's; Go's unicode
// package has Unicode 15.0's. unicode.json holds what it takes to split and normalize as the
// reference does:
//   - general_category_16: the code points whose general category in Unicode 16.0 differs
//     from Unicode 15.0's (those 16.0 assigned, and any whose category changed), with it;
//   - unassigned_9: the code points Unicode 9.0 does not assign (its normalizer leaves them as
//     they are).
import fs from 'node:fs';
import path from 'node:path';

const here = path.dirname(new URL(import.meta.url).pathname);
const pkg = (v) => path.join(here, 'node_modules', '@unicode', `unicode-${v}`);
const version = (v) => JSON.parse(fs.readFileSync(path.join(pkg(v), 'package.json'), 'utf8')).version;

const categories = {
  Lu: 'Uppercase_Letter', Ll: 'Lowercase_Letter', Lt: 'Titlecase_Letter', Lm: 'Modifier_Letter', Lo: 'Other_Letter',
  Mn: 'Nonspacing_Mark', Mc: 'Spacing_Mark', Me: 'Enclosing_Mark',
  Nd: 'Decimal_Number', Nl: 'Letter_Number', No: 'Other_Number',
  Pc: 'Connector_Punctuation', Pd: 'Dash_Punctuation', Ps: 'Open_Punctuation', Pe: 'Close_Punctuation',
  Pi: 'Initial_Punctuation', Pf: 'Final_Punctuation', Po: 'Other_Punctuation',
  Sm: 'Math_Symbol', Sc: 'Currency_Symbol', Sk: 'Modifier_Symbol', So: 'Other_Symbol',
  Zs: 'Space_Separator', Zl: 'Line_Separator', Zp: 'Paragraph_Separator',
  Cc: 'Control', Cf: 'Format', Cs: 'Surrogate', Co: 'Private_Use', Cn: 'Unassigned',
};

// ranges returns the [begin, end) ranges of a property of a version.
async function ranges(v, dir) {
  const m = await import(path.join(pkg(v), dir, 'ranges.mjs'));
  return m.default.map((r) => [r.begin, r.end]);
}

// table returns the general category of every code point in a version.
async function table(v) {
  const t = new Array(0x110000).fill('Cn');
  for (const [short, long] of Object.entries(categories)) {
    for (const [b, e] of await ranges(v, `General_Category/${long}`)) t.fill(short, b, e);
  }
  return t;
}

async function set(v, dir) {
  const s = new Uint8Array(0x110000);
  for (const [b, e] of await ranges(v, dir)) s.fill(1, b, e);
  return s;
}

async function main() {
  const [g15, g16] = [await table('15.0.0'), await table('16.0.0')];
  const changed = [];
  for (let c = 0; c < 0x110000; c++) {
    if (g15[c] === g16[c]) continue;
    const last = changed[changed.length - 1];
    if (last && last[1] === c - 1 && last[2] === g16[c]) last[1] = c;
    else changed.push([c, c, g16[c]]);
  }
  const [w15, w16] = [await set('15.0.0', 'Binary_Property/White_Space'), await set('16.0.0', 'Binary_Property/White_Space')];
  if (w15.some((x, i) => x !== w16[i])) throw new Error('White_Space differs between 15.0 and 16.0: the tables need it');
  const unassigned = (await ranges('9.0.0', 'General_Category/Unassigned')).map(([b, e]) => [b, e - 1]);
  const out = {
    made_by: 'node gen.mjs',
    source: ['9.0.0', '15.0.0', '16.0.0'].map((v) => `@unicode/unicode-${v}@${version(v)}`),
    general_category_16: changed,
    unassigned_9: unassigned,
  };
  fs.writeFileSync(path.join(here, 'unicode.json'), JSON.stringify(out) + '\n');
  console.log(`unicode.json: ${changed.length} ranges of 16.0 categories, ${unassigned.length} ranges unassigned in 9.0`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
