package config_test

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/config"
)

// TestConfigurationDocumented: every key the file may hold has its row in
// docs/configuration.md, so a key added to the structs without its documentation fails here.
func TestConfigurationDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []any{config.Config{}, config.Compaction{}, config.Serve{}, config.Notice{}, config.Provider{}} {
		ty := reflect.TypeOf(v)
		for i := range ty.NumField() {
			key, _, _ := strings.Cut(ty.Field(i).Tag.Get("yaml"), ",")
			if key == "" || key == "-" {
				continue
			}
			if !strings.Contains(string(doc), "| `"+key+"` |") {
				t.Errorf("%s.%s: key %q has no row in docs/configuration.md", ty.Name(), ty.Field(i).Name, key)
			}
		}
	}
}
