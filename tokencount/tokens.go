// Package tokencount counts the tokens of what a thread sends to its model: chat messages and
// tool definitions, as OpenAI's cookbook counts them, with the built-in BPE encodings of package
// tokenizer or a vocabulary file, and the encoding a model gets.
package tokencount

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/jsontext"
	"github.com/memcascade/memcascade/tokenizer"
)

// Encoding names. Package tokenizer holds the one list of the built-in encodings (Encodings);
// these constants name them for callers of this package.
const (
	EncodingO200k  = tokenizer.O200kBase
	EncodingCL100k = tokenizer.CL100kBase
	EncodingP50k   = tokenizer.P50kBase
	EncodingR50k   = tokenizer.R50kBase
)

// FileEncodingPrefix starts the encoding name of a vocabulary loaded from a file (see
// NewFileCounter): "file:" and 16 hexadecimal digits of a SHA-256 of the file (and of its split
// pattern, for a tiktoken-format file).
const FileEncodingPrefix = "file:"

// Encodings returns the names of the built-in encodings: o200k_base, cl100k_base, p50k_base
// and r50k_base.
func Encodings() []string { return tokenizer.Names() }

// ReplyPriming is the 3 tokens every reply is primed with (<|start|>assistant<|message|>).
const ReplyPriming = 3

// Token costs of the chat format, from OpenAI's cookbook "How to count tokens with tiktoken"
// (examples/How_to_count_tokens_with_tiktoken.ipynb in openai/openai-cookbook).
const (
	// tokensPerMessage frames every message: <|start|>{role}<|message|>{content}<|end|>.
	tokensPerMessage = 3
	// tokensPerName is added on top of the name's own tokens when a message has a name.
	tokensPerName = 1
	// imagePartTokens is what an image_url content part is counted as: OpenAI's price of a
	// low-detail image. It is an estimate: a high-detail image costs 85 plus 170 per 512-pixel
	// tile, which cannot be known without fetching the image.
	imagePartTokens = 85
	// toolCallOverhead is added per entry of an assistant message's tool_calls, on top of the
	// function name and arguments. The cookbook gives no rule for tool calls; this is an
	// estimate of the framing the model sees around each call.
	toolCallOverhead = 3
)

// Costs of the tool (function) definitions, from the cookbook's num_tokens_for_tools.
const (
	funcInitO200k  = 7  // start of each function, gpt-4o and newer (o200k_base)
	funcInitCL100k = 10 // start of each function, gpt-4 and gpt-3.5 (cl100k_base)
	propInit       = 3  // start of a set of properties
	propKey        = 3  // each property
	enumInit       = -3 // a property with an enum
	enumItem       = 3  // each enum value, on top of the value's own tokens
	funcEnd        = 12 // once after all functions, when there is at least one
)

// o200kPrefixes and cl100kPrefixes map model-name prefixes to encodings. Order matters: the
// o200k prefixes are checked first so "gpt-4o" and "gpt-4.1" are not taken for "gpt-4".
var (
	o200kPrefixes  = []string{"gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4"}
	cl100kPrefixes = []string{"gpt-4-", "gpt-3.5", "text-embedding-3", "text-embedding-ada-002"}
)

// ResolveEncoding picks the encoding for a model.
//
// When override is non-empty it is the answer, provided it is a built-in encoding (see
// Encodings; any other name is an error naming it), and known is true: the caller chose the
// encoding.
//
// Otherwise the model name decides. A provider prefix is dropped first ("openai/gpt-4o" is
// "gpt-4o": everything up to the last '/' goes), and the name is compared in lower case.
//   - o200k_base: gpt-4o*, chatgpt-4o*, gpt-4.1*, gpt-4.5*, gpt-5*, o1*, o3*, o4*.
//   - cl100k_base: gpt-4, gpt-4-* (which includes gpt-4-turbo* and gpt-4-32k*), gpt-3.5*,
//     text-embedding-3*, text-embedding-ada-002*.
//
// Any other model, including "", gets o200k_base (the encoding of every current OpenAI chat
// model) with known false, so the caller can print one warning that counts may be off.
func ResolveEncoding(model, override string) (encoding string, known bool, err error) {
	if override != "" {
		if tokenizer.Known(override) {
			return override, true, nil
		}
		return "", false, unknownEncoding(override)
	}
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	for _, p := range o200kPrefixes {
		if strings.HasPrefix(m, p) {
			return EncodingO200k, true, nil
		}
	}
	if m == "gpt-4" {
		return EncodingCL100k, true, nil
	}
	for _, p := range cl100kPrefixes {
		if strings.HasPrefix(m, p) {
			return EncodingCL100k, true, nil
		}
	}
	return EncodingO200k, false, nil
}

func unknownEncoding(name string) error {
	if strings.HasPrefix(name, FileEncodingPrefix) {
		return fmt.Errorf("encoding %q is a vocabulary file's: it needs a counter made from that file (NewFileCounter, or encoding_file in the config) with the same vocabulary and pattern", name)
	}
	return fmt.Errorf("unknown encoding %q: want one of %s", name, strings.Join(Encodings(), ", "))
}

// Counter counts the tokens of what a thread sends to its model. A memory.Store keeps one per
// encoding (Store.Counter) and records in each thread the Encoding of the counter that counted
// it; a host brings its own tokenizer by implementing this interface and handing it to the
// store it builds (memory.Options.Counter). A Counter must be safe for concurrent use, and must count the same
// input the same way for as long as threads recorded under its Encoding exist: stored counts
// are never recomputed.
type Counter interface {
	// Encoding names the tokenizer. It is stored with every thread the counter counts, and must
	// differ from the name of any other tokenizer (the built-in names are taken).
	Encoding() string
	// CountText returns the tokens of a text.
	CountText(s string) int
	// CountMessage returns the tokens of one message with its framing, without the reply
	// priming.
	CountMessage(m chat.Message) int
	// CountMessages returns the tokens of a request's messages, reply priming included.
	CountMessages(ms []chat.Message) int
	// CountTools returns the tokens the tool definitions add to a request.
	CountTools(tools []chat.Tool) int
}

// BPECounter is the built-in Counter: it counts as OpenAI's cookbook "How to count tokens
// with tiktoken" does, with the extensions documented on each method, using a BPE encoding of
// package tokenizer. The counts are what the API reported for the cookbook's examples; for
// anything else they are a close estimate, not a guarantee.
//
// Text is encoded with special-token text (such as "<|endoftext|>") treated as ordinary text,
// as tiktoken's Encode(text, nil, nil) and encode_ordinary do, so any user text can be counted.
//
// For o200k_base and cl100k_base the tokens are exactly those of tiktoken (package tokenizer is
// checked token for token against tiktoken-go), computed by a much faster encoder; p50k_base,
// r50k_base and tiktoken-format vocabulary files are encoded by tiktoken-go itself, and a
// tokenizer.json by package tokenizer (checked token for token against the tokenizers library).
//
// A built-in encoding is loaded on first use, once per process per encoding, and shared by all
// counters of that encoding. A BPECounter is safe for concurrent use: encoding only reads the
// loaded tables and a cache of encoded pieces that is itself safe for concurrent use.
type BPECounter struct {
	encoding string
	funcInit int
	load     func() (tokenizer.Encoder, error)
}

var _ Counter = (*BPECounter)(nil)

// NewCounter returns the built-in counter for a built-in encoding (see Encodings); any
// other name is an error. It does not load the encoding: the first count does.
func NewCounter(encoding string) (*BPECounter, error) {
	if !tokenizer.Known(encoding) {
		return nil, unknownEncoding(encoding)
	}
	funcInit := funcInitCL100k // the cookbook's value for the models before gpt-4o
	if encoding == EncodingO200k {
		funcInit = funcInitO200k
	}
	return &BPECounter{encoding: encoding, funcInit: funcInit, load: sync.OnceValues(func() (tokenizer.Encoder, error) {
		return tokenizer.Builtin(encoding) // loaded once per process, whatever the counter
	})}, nil
}

// NewFileCounter returns a counter for a vocabulary file, which is one of:
//
//   - a Hugging Face tokenizer.json of a byte-level BPE model (most models served locally ship
//     one; Qwen 3's and Llama 3's are tested), recognized by its content (a JSON object). It is encoded
//     as the reference implementation (the tokenizers library) encodes text without special
//     tokens; see tokenizer.HF for what such a file may hold. pattern must be "": the file's
//     pre_tokenizer says how text is split. Added tokens (special tokens such as
//     "<|im_start|>", and Qwen 3's "<think>") are not looked for in the text: their text counts
//     as ordinary text, as special-token text counts everywhere else.
//   - a tiktoken-format vocabulary (one token a line: its bytes in base64, a space, its rank;
//     Llama 3's tokenizer.model is one), split by pattern, a regular expression in the syntax
//     of github.com/dlclark/regexp2 ("" means the cl100k_base pattern, which Llama 3 also uses).
//     It is encoded by tiktoken-go's BPE.
//
// The file is read now, and parsed on first use (Load parses it at once and returns its
// errors, which name the file and the line or the component; memory.Store.Counter calls Load). A file
// is parsed at most once per process, whatever the number of counters made from it. The
// counter's Encoding is FileEncodingName's: FileEncodingPrefix and the first 16 hexadecimal
// digits of a SHA-256 of the file (and of the pattern, for a tiktoken-format file): a thread
// counted with one file records that name, and a counter made from another file or pattern
// does not count it (memory.Store.Counter refuses). Tool definitions count 7 per function, the
// cookbook's value for current models.
func NewFileCounter(path, pattern string) (*BPECounter, error) {
	vocab, err := readVocabulary(path)
	if err != nil {
		return nil, fmt.Errorf("encoding file: %w", err)
	}
	hf := tokenizer.IsHFJSON(vocab)
	if hf && pattern != "" {
		return nil, fmt.Errorf("encoding file %s is a tokenizer.json: its pre_tokenizer says how it splits text, so encoding_pattern must not be set", path)
	}
	if pattern == "" {
		pattern = tokenizer.CL100kPattern
	}
	name := FileEncodingName(vocab, pattern)
	shared, _ := fileEncoders.LoadOrStore(name, sync.OnceValues(func() (tokenizer.Encoder, error) {
		if hf {
			return tokenizer.ParseHF(name, vocab)
		}
		return tokenizer.NewGeneric(name, vocab, pattern)
	}))
	parse := shared.(func() (tokenizer.Encoder, error))
	return &BPECounter{encoding: name, funcInit: funcInitO200k, load: func() (tokenizer.Encoder, error) {
		enc, err := parse()
		if err != nil {
			return nil, fmt.Errorf("encoding file %s: %w", path, err)
		}
		return enc, nil
	}}, nil
}

// fileEncoders holds the encoder of each vocabulary file by its encoding name, loaded at most
// once per process (a tokenizer.json takes tens of megabytes while it is parsed).
var fileEncoders sync.Map

// MaxVocabularyBytes bounds a vocabulary file (o200k_base's is 3.6 MB, Qwen 3's tokenizer.json
// 11 MB): a device, a pipe or a runaway file is refused, never read without end.
const MaxVocabularyBytes = 64 << 20

// readVocabulary reads a regular file of at most MaxVocabularyBytes.
func readVocabulary(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if st.Size() > MaxVocabularyBytes {
		return nil, fmt.Errorf("%s has %d bytes, over the %d a vocabulary may have", path, st.Size(), MaxVocabularyBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxVocabularyBytes+1))
	if err == nil && len(b) > MaxVocabularyBytes {
		err = fmt.Errorf("%s grew past the %d bytes a vocabulary may have", path, MaxVocabularyBytes)
	}
	return b, err
}

// FileEncodingName is the Encoding of NewFileCounter for a vocabulary file and its split pattern
// ("" is the cl100k_base pattern): FileEncodingPrefix and 16 hexadecimal digits of the SHA-256
// of the pattern, a zero byte and the file, or of the file alone for a tokenizer.json (whose
// pattern is in it).
func FileEncodingName(vocab []byte, pattern string) string {
	h := sha256.New()
	if !tokenizer.IsHFJSON(vocab) {
		if pattern == "" {
			pattern = tokenizer.CL100kPattern
		}
		h.Write([]byte(pattern))
		h.Write([]byte{0})
	}
	h.Write(vocab)
	return FileEncodingPrefix + hex.EncodeToString(h.Sum(nil))[:16]
}

// Encoding returns the counter's encoding name.
func (c *BPECounter) Encoding() string { return c.encoding }

// Load loads the encoding now if it is not loaded yet, and returns the error a count would
// panic with.
func (c *BPECounter) Load() error {
	_, err := c.load()
	return err
}

// Encode returns the tokens of s, treating special-token text as ordinary text. It loads the
// encoding on first use and panics if a built-in encoding cannot be loaded, which would mean
// the build itself is broken.
func (c *BPECounter) Encode(s string) []int {
	if s == "" {
		return []int{}
	}
	return c.encoder().Encode(s)
}

// CountText returns the number of tokens of s: len(Encode(s)), without building the tokens
// where the encoder can. It loads the encoding on first use as Encode does.
func (c *BPECounter) CountText(s string) int {
	if s == "" {
		return 0
	}
	return c.encoder().Count(s)
}

// encoder returns the counter's encoding. tokenizer.Builtin loads a built-in encoding once per
// process, on first use, and returns the same encoding afterwards. encoder panics if the
// encoding cannot be loaded, which would mean the build itself is broken.
func (c *BPECounter) encoder() tokenizer.Encoder {
	enc, err := c.load()
	if err != nil {
		panic(fmt.Sprintf("tokencount: loading token encoding %s: %v", c.encoding, err))
	}
	return enc
}

// CountMessage returns the tokens of one message with its per-message overhead, not counting
// the reply priming (see CountMessages):
//
//   - 3 for the message framing, plus the tokens of the role;
//   - the content: a string is encoded; null or absent content is 0; an array of parts is the
//     sum of its parts (see below); content that is neither counts the tokens of its JSON;
//   - a name: its tokens plus 1;
//   - tool_call_id: its tokens;
//   - each tool call (the cookbook has no rule for these; this is an estimate): the tokens of
//     the function name and of the arguments, plus 3. The call's id and type are not counted:
//     the model does not see them as text the way it sees the name and arguments.
//
// A content part counts by its type:
//
//   - "text": its text; "refusal": its refusal text;
//   - "image_url": 85, OpenAI's price of a low-detail image (an estimate: a high-detail image
//     costs 85 plus 170 per 512-pixel tile, which cannot be known without fetching it);
//   - "input_audio": 1 token per 100 ms of audio, rounded up, the rate OpenAI documents for
//     audio in user messages (Realtime API cost guide: "Audio tokens in user messages are 1
//     token per 100 ms of audio"). The duration is read from the audio itself: a WAV file's
//     header (its data size over its byte rate), an MP3's Xing/Info/VBRI frame count or, for a
//     constant bit rate, its size over the bit rate of its first frame. Audio whose duration
//     cannot be read is estimated at 128 kbit/s from its decoded size (an estimate);
//   - "file" (a PDF, the only file type Chat Completions takes): OpenAI puts the extracted text
//     and an image of each page into the context and documents no price per page, so this is
//     an estimate: 85 per page for the image (the low-detail price) plus 500 for its text (a
//     full page of prose), plus the tokens of the filename. The pages are counted from the PDF's
//     page objects; when none can be read (compressed object streams, or a file_id with no
//     data) the page count is estimated at one per 64 KiB of file, at least one;
//   - any other part: the tokens of its JSON.
//
// Fields kept in Extra (and in a tool call's Extra) are not counted: they are not part of what
// OpenAI renders into the prompt, or their cost is unknown.
func (c *BPECounter) CountMessage(m chat.Message) int {
	return c.countMessage(m, c.countContent(m.Content))
}

func (c *BPECounter) countMessage(m chat.Message, content int) int {
	n := tokensPerMessage + c.CountText(m.Role) + content
	if m.Name != "" {
		n += c.CountText(m.Name) + tokensPerName
	}
	n += c.CountText(m.ToolCallID)
	for _, tc := range m.ToolCalls {
		n += toolCallOverhead + c.CountText(tc.Function.Name) + c.CountText(tc.Function.Arguments)
	}
	return n
}

// CountMessageWithText returns counter.CountMessage(m) for a message whose content is the JSON
// string text, already decoded by the caller: the built-in counter counts text instead of
// decoding the content a second time.
func CountMessageWithText(counter Counter, m chat.Message, text string) int {
	if c, ok := counter.(*BPECounter); ok {
		return c.countMessage(m, c.CountText(text))
	}
	return counter.CountMessage(m)
}

// CountMessages returns the tokens of a request's messages: the sum of CountMessage over them
// plus ReplyPriming (3, also for an empty list), as the cookbook's num_tokens_from_messages.
func (c *BPECounter) CountMessages(ms []chat.Message) int {
	n := ReplyPriming
	for _, m := range ms {
		n += c.CountMessage(m)
	}
	return n
}

func (c *BPECounter) countContent(content json.RawMessage) int {
	content = bytes.TrimSpace(content)
	if len(content) == 0 || bytes.Equal(content, []byte("null")) {
		return 0
	}
	switch content[0] {
	case '"':
		if s, ok := jsontext.StringValue(content); ok {
			return c.CountText(s)
		}
	case '[':
		var parts []json.RawMessage
		if json.Unmarshal(content, &parts) == nil {
			n := 0
			for _, p := range parts {
				n += c.countPart(p)
			}
			return n
		}
	}
	return c.CountText(string(content))
}

func (c *BPECounter) countPart(p json.RawMessage) int {
	var part struct {
		Type       string     `json:"type"`
		Text       string     `json:"text"`
		Refusal    string     `json:"refusal"`
		InputAudio inputAudio `json:"input_audio"`
		File       inputFile  `json:"file"`
	}
	if json.Unmarshal(p, &part) == nil {
		switch part.Type {
		case "text":
			return c.CountText(part.Text)
		case "refusal":
			return c.CountText(part.Refusal)
		case "image_url":
			return imagePartTokens
		case "input_audio":
			return part.InputAudio.tokens()
		case "file":
			return part.File.tokens() + c.CountText(part.File.Filename)
		}
	}
	return c.CountText(string(jsontext.Compact(p)))
}

// CountTools returns the tokens the tool definitions add to a request: the function part of the
// cookbook's num_tokens_for_tools (add CountMessages for the whole prompt). Type is not
// inspected: every tool is counted by its Function.
//
// Each function counts 7 with o200k_base (gpt-4o and every newer model) and vocabulary files,
// or 10 with cl100k_base (gpt-4, gpt-3.5), p50k_base and r50k_base, plus the tokens of "name:description". If the parameters have a non-empty
// "properties", that set counts 3, and each property in it counts 3 plus the tokens of
// "key:type:description". Once there is at least one tool, 12 more are added at the end. Every
// description loses one trailing '.'.
//
// The cookbook covers flat properties with a string type, a description and maybe an enum.
// The rest is defined here:
//   - a property with no description (or one that is not a string) is "key:type:";
//   - a missing type is empty, a list of types is joined with "," ("string,null"), and a type
//     that is neither is its JSON;
//   - an "enum" (on a property, or on the items of an array property) counts -3, and each value
//     3 plus the tokens of the value (a string) or of its JSON (anything else);
//   - a property with its own non-empty "properties" (an object) counts that set recursively as
//     above: 3 for the set, then each nested property;
//   - a property with "items" that is an object: the items' enum and non-empty properties count
//     as above, and the items' own "items" likewise (arrays of arrays);
//   - nothing else is counted: not the parameters' own type or description, not "required",
//     "additionalProperties", "anyOf", "default" and other keywords, not tuple-form items.
//
// Parameters that are not valid JSON, or not an object, add nothing beyond name and description.
func (c *BPECounter) CountTools(tools []chat.Tool) int {
	if len(tools) == 0 {
		return 0
	}
	n := 0
	for _, t := range tools {
		f := t.Function
		n += c.funcInit + c.CountText(f.Name+":"+strings.TrimSuffix(f.Description, "."))
		n += c.countProperties(schemaFields(f.Parameters)["properties"])
	}
	return n + funcEnd
}

// countProperties counts a schema's "properties" object: 3 for the set and each property, or 0
// when it is absent, empty or not an object.
func (c *BPECounter) countProperties(raw json.RawMessage) int {
	var props map[string]json.RawMessage
	if json.Unmarshal(raw, &props) != nil || len(props) == 0 {
		return 0
	}
	n := propInit
	for key, p := range props {
		s := schemaFields(p)
		desc := strings.TrimSuffix(jsonString(s["description"]), ".")
		n += propKey + c.CountText(key+":"+schemaType(s["type"])+":"+desc)
		n += c.countEnum(s["enum"]) + c.countProperties(s["properties"]) + c.countItems(s["items"])
	}
	return n
}

// countItems counts the enum, properties and items of an array's "items" schema.
func (c *BPECounter) countItems(raw json.RawMessage) int {
	s := schemaFields(raw)
	if s == nil {
		return 0
	}
	return c.countEnum(s["enum"]) + c.countProperties(s["properties"]) + c.countItems(s["items"])
}

// countEnum counts an "enum" array: -3, then 3 plus its tokens per value. It is 0 when absent
// or not an array.
func (c *BPECounter) countEnum(raw json.RawMessage) int {
	var values []json.RawMessage
	if json.Unmarshal(raw, &values) != nil || values == nil {
		return 0
	}
	n := enumInit
	for _, v := range values {
		s, ok := asString(v)
		if !ok {
			s = string(jsontext.Compact(v))
		}
		n += enumItem + c.CountText(s)
	}
	return n
}

// schemaFields decodes a JSON object into its fields; it is nil for anything else.
func schemaFields(raw json.RawMessage) map[string]json.RawMessage {
	var fields map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &fields) != nil {
		return nil
	}
	return fields
}

// schemaType renders a schema's "type": a string as is, a list of strings joined with ",", absent
// or null as "", anything else as its JSON.
func schemaType(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return ""
	}
	if s, ok := asString(raw); ok {
		return s
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		return strings.Join(list, ",")
	}
	return string(jsontext.Compact(raw))
}

// jsonString returns a JSON string's value, or "" for anything else.
func jsonString(raw json.RawMessage) string {
	s, _ := asString(raw)
	return s
}

func asString(raw json.RawMessage) (string, bool) {
	var s string
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}
