package lua

import (
	"strings"
	"testing"

	argolua "github.com/argoproj/argo-cd/v3/util/lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	sflua "github.com/spokeforge/spokeforge/lua"
)

// FuzzMinify checks that a script and its minified form behave the same
// through Argo CD's util/lua, as the controller runs a health check (default
// sandbox): the same health on a few fixtures, or both failing (an input that
// shows a [==[ ]==] string's text in its message is skipped: such a string is
// code by Minify's convention). The seeds are
// the scripts of lua/ and the cases of package lua's TestMinify (copied in
// copies_test.go); go test runs them, and, in test/conformance-v3,
// GOTOOLCHAIN=go1.27.3 go test ./lua -run '^$' -fuzz FuzzMinify mutates them.
func FuzzMinify(f *testing.F) {
	for _, s := range loadScripts(f) {
		f.Add(s.Source)
	}
	for _, c := range minifyCases {
		f.Add(c.src)
	}
	f.Add("return loadstring([==[\n  return { status = \"Healthy\", -- x\n message = [[ -- y ]] .. \"--z\" .. [=[ ]=] } ]==])()\n")
	var objs []*unstructured.Unstructured
	for _, p := range []string{
		"cert-manager.io/Certificate/testdata/degraded_stale_backoff.yaml",
		"external-secrets.io/ExternalSecret/testdata/progressing_eventual_consistency_in_grace.yaml",
		"spokeforge.io/Onboarding/testdata/degraded_queues.yaml",
	} {
		objs = append(objs, loadObj(f, p))
	}
	vm := argolua.VM{}
	f.Fuzz(func(t *testing.T, src string) {
		out, err := sflua.Minify(src)
		if err != nil {
			return
		}
		if again, err := sflua.Minify(out); err != nil || again != out {
			t.Fatalf("not idempotent: %q → %q (%v)", out, again, err)
		}
		for _, obj := range objs {
			want, errSrc := vm.ExecuteHealthLua(obj, src)
			got, errOut := vm.ExecuteHealthLua(obj, out)
			if (errSrc == nil) != (errOut == nil) {
				t.Fatalf("%s: source gives %v, minified %v\nminified:\n%s", obj.GetKind(), errSrc, errOut, out)
			}
			if errSrc != nil {
				// A syntax error ("<string> line:1(column:5) near …", "<string>
				// at EOF: …") says where the parser stopped, which minifying
				// moves; a timeout says nothing about the script. Any other
				// error (a runtime error names the line) must be the same.
				e := errSrc.Error()
				if !strings.Contains(e, "<string> line:") && !strings.Contains(e, "<string> at EOF") && !strings.Contains(e, "context deadline") && e != errOut.Error() {
					t.Fatalf("%s: source fails with %q, minified with %q", obj.GetKind(), errSrc, errOut)
				}
				continue
			}
			// A script that returns nothing has no health (nil) on v3.6.2,
			// where v2.14.21 gave an empty one: both forms must agree on that too.
			if (want == nil) != (got == nil) {
				t.Fatalf("%s: source gives %+v, minified %+v", obj.GetKind(), want, got)
			}
			if want != nil && *want != *got {
				if dataInCodeString(src, want.Message) {
					t.Skip("a [==[ ]==] string used as data, not code: outside Minify's convention")
				}
				t.Fatalf("%s: source gives %+v, minified %+v", obj.GetKind(), *want, *got)
			}
		}
	})
}
