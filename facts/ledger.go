package facts

import "strings"

// Merge returns the ledger of older followed by newer (facts of later messages): each fact once,
// by kind and normalised text. A fact in both keeps older's first sighting and entity and the
// higher weight (and its Key and Of, else newer's); it is dropped only when newer does not see it again (a later message that
// repeats a fact makes it needed again). The result is sorted as Extract sorts; when one side
// is empty it is the other, as given (a ledger of Extract or Merge is sorted already).
func Merge(older, newer []Fact) []Fact {
	switch {
	case len(newer) == 0:
		return older
	case len(older) == 0:
		return newer
	}
	out := make([]Fact, 0, len(older)+len(newer))
	at := make(map[factKey]int, len(older)+len(newer))
	for _, fs := range [][]Fact{older, newer} {
		for _, f := range fs {
			key := factKey{f.Kind, normalize(f.Text)}
			i, ok := at[key]
			if !ok {
				at[key] = len(out)
				out = append(out, f)
				continue
			}
			out[i].Weight = max(out[i].Weight, f.Weight)
			out[i].Dropped = out[i].Dropped && f.Dropped
			if out[i].Key == "" {
				out[i].Key, out[i].Of = f.Key, f.Of
			}
		}
	}
	sortFacts(out)
	return out
}

// CallText is the text of the tool_call fact of a call: "name(key=value, ...)" (see [Kept]).
func CallText(tc ToolCall) string {
	name := strings.Join(strings.Fields(strings.ToValidUTF8(tc.Name, "\uFFFD")), " ")
	args := strings.ToValidUTF8(tc.Arguments, "\uFFFD")
	v, ok := parseJSONDoc(args)
	text, _ := toolCallText(name, v, ok, args)
	return text
}
