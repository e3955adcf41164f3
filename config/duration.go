package config

import (
	"encoding/json"
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"
)

// Duration is a time.Duration written as "60s", "5m", "1h" in YAML and JSON.
//
// It marshals compactly: whole hours as "1h", whole minutes as "5m", anything
// else as time.Duration.String() ("1m30s", "1.5s"). It unmarshals anything
// time.ParseDuration accepts; bare numbers are rejected.
type Duration time.Duration

// String returns the compact form ("1h", "5m", "1m30s").
func (d Duration) String() string {
	td := time.Duration(d)
	switch {
	case td == 0:
		return "0s"
	case td%time.Hour == 0:
		return fmt.Sprintf("%dh", td/time.Hour)
	case td%time.Minute == 0:
		return fmt.Sprintf("%dm", td/time.Minute)
	default:
		return td.String()
	}
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a duration (e.g. \"60s\", \"5m\", \"1h\")", b)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration as a JSON string ("5m").
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a JSON string such as "60s"; numbers are rejected and
// null leaves d unchanged.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"60s\", not %s", b)
	}
	return d.UnmarshalText([]byte(s))
}

// MarshalYAML writes the duration as a YAML string ("5m").
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// UnmarshalYAML reads a YAML string such as "60s"; numbers are rejected.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, msg := decodeDuration(n)
	if msg != "" {
		return fmt.Errorf("line %d: %s", n.Line, msg)
	}
	*d = v
	return nil
}
