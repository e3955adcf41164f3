package config

import (
	"encoding/json"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// maskFields are the keys of compaction.mask (see compact.MaskSettings).
func maskFields(m *Mask) []field {
	return []field{
		{key: "keep_tool_results", ptr: &m.KeepToolResults},
		{key: "exclude_tools", sub: nil},
		{key: "clear_tool_inputs", ptr: &m.ClearToolInputs},
		{key: "clear_thinking", ptr: &m.ClearThinking},
	}
}

// mask decodes compaction.mask into m: a mapping of the mask knobs, exclude_tools a list of
// tool names (each one a string; its line is recorded, so that a bad name is reported there).
func (w *walker) mask(n *yaml.Node, key string, line int, m *Mask) {
	if n.Kind != yaml.MappingNode {
		w.errorf(line, key, "expected a mapping of mask settings (keep_tool_results, exclude_tools, clear_tool_inputs, clear_thinking), found %s", describe(n))
		return
	}
	fields := maskFields(m)
	fields[1].sub = func(n *yaml.Node, key string, line int) {
		if n.Kind != yaml.SequenceNode {
			w.errorf(line, key, "expected a list of tool names, found %s", describe(n))
			return
		}
		names := make([]string, 0, len(n.Content))
		for i, item := range n.Content {
			k := fmt.Sprintf("%s[%d]", key, i)
			w.lines[k] = item.Line
			var s string
			if it := resolve(item); isNull(it) || it.Kind != yaml.ScalarNode {
				w.errorf(item.Line, k, "expected a tool's name (a string), found %s", describe(it))
			} else {
				w.scalar(it, k, item.Line, &s)
			}
			names = append(names, s)
		}
		if len(names) > 0 { // [] is none, as the default renders it
			m.ExcludeTools = names
		}
	}
	w.mapping(n, key, fields)
}

// compactionSection are the keys of the compaction section: compactionFields and mask.
func (w *walker) compactionSection(c *Compaction) []field {
	return append(compactionFields(c), field{key: "mask", sub: func(n *yaml.Node, key string, line int) { w.mask(n, key, line, &c.Mask) }})
}

// MarshalJSON writes exclude_tools as [] when there are none, as the YAML does.
func (m Mask) MarshalJSON() ([]byte, error) {
	type plain Mask
	if m.ExcludeTools == nil {
		m.ExcludeTools = []string{}
	}
	return json.Marshal(plain(m))
}
