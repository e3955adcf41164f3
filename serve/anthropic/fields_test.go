package anthropic

import (
	"reflect"
	"testing"

	"github.com/memcascade/memcascade/serve/dialect"
)

// TestFieldsIsScanObject: the reader of valid objects finds the members the request's
// scanner finds, whatever their values and white space; splitArray likewise the elements.
func TestFieldsIsScanObject(t *testing.T) {
	for _, in := range []string{
		`{}`, ` { } `,
		`{"a":1}`, `{"a":-1.5e3,"b":true,"c":null,"d":false}`,
		`{ "a" : [ 1 , 2 , {"x":"}"} ] , "b" : { "c" : "\"]" } , "e\u0041" : "\\" }`,
		`{"type":"tool_use","input":{},"id":"t"}`,
		`{"content":[{"type":"text","text":"a,b}"}],"role":"user"}`,
		"{\"a\":\n1\n,\n\"b\":[]\n}",
	} {
		want, _, err := dialect.ScanObject([]byte(in), "")
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got := members([]byte(in)); !reflect.DeepEqual(got, want) && len(got)+len(want) > 0 {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
		_, elems, _ := dialect.ScanObject([]byte(`{"x":[`+in+`, 1 ,"s",[2],`+in+`]}`), "x")
		if got := splitArray([]byte(`[` + in + `, 1 ,"s",[2],` + in + `]`)); !reflect.DeepEqual(got, elems) {
			t.Errorf("[%s, ...]: %q, want %q", in, got, elems)
		}
	}
}
