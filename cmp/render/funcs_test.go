package render

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/Masterminds/sprig/v3"
)

// TestTextFuncsMatchSprig: the template functions taken over from sprig give
// sprig's results on values of every kind.
func TestTextFuncsMatchSprig(t *testing.T) {
	var nilPtr *int
	var nilMap map[string]int
	values := []any{nil, "", "x", 0, 1, int8(-1), uint(0), uint64(7), 0.0, 2.5, false, true, complex(0, 0),
		[]string{}, []string{"a"}, map[string]int{}, nilMap, nilPtr, struct{}{}, []byte("b"),
		errors.New("boom"), time.Duration(3), [0]int{}, fmt.Stringer(time.Second)}
	sp := sprig.TxtFuncMap()
	// call calls a template function as text/template does; a nil argument is a nil any.
	call := func(f any, args ...any) any {
		in := make([]reflect.Value, len(args))
		for i, a := range args {
			if in[i] = reflect.ValueOf(a); a == nil {
				in[i] = reflect.ValueOf(&a).Elem()
			}
		}
		return reflect.ValueOf(f).Call(in)[0].Interface()
	}
	for _, v := range values {
		for _, tc := range []struct {
			name string
			args []any
		}{
			{"default", []any{"fallback", v}},
		} {
			got, want := call(textFuncs[tc.name], tc.args...), call(sp[tc.name], tc.args...)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s(%#v) = %#v, sprig gives %#v", tc.name, v, got, want)
			}
		}
	}
	if got := call(textFuncs["default"], "fallback"); got != call(sp["default"], "fallback") {
		t.Errorf("default without a value = %#v", got)
	}
	for _, tc := range [][3]string{{"a", "b", "banana"}, {"", "-", "ab"}, {"an", "", "banana"}, {"x", "y", ""}} {
		if got, want := call(textFuncs["replace"], tc[0], tc[1], tc[2]), call(sp["replace"], tc[0], tc[1], tc[2]); got != want {
			t.Errorf("replace%q = %q, sprig gives %q", tc, got, want)
		}
	}
	for _, s := range []string{"", "abc", "ÄéB-1"} {
		if got, want := call(textFuncs["upper"], s), call(sp["upper"], s); got != want {
			t.Errorf("upper(%q) = %q, sprig gives %q", s, got, want)
		}
	}
}
