package render

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// repeated is n copies of s joined by sep.
func repeated(s, sep string, n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = strings.ReplaceAll(s, "N", fmt.Sprint(i))
	}
	return strings.Join(parts, sep)
}

// nested: kustomization directories n1..depth, each building the one
// below twice under two name prefixes, so the object at the bottom is
// built 2^depth times.
func nested(depth int) map[string]string {
	files := map[string]string{
		"kustomization.yaml":    "resources: [n" + fmt.Sprint(depth) + "]\n",
		"n0/kustomization.yaml": "resources: [cm.yaml]\n",
		"n0/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: leaf, namespace: default}\n",
	}
	for i := 1; i <= depth; i++ {
		n := fmt.Sprintf("n%d", i)
		files[n+"/kustomization.yaml"] = "resources: [a, b]\n"
		for _, side := range []string{"a", "b"} {
			files[n+"/"+side+"/kustomization.yaml"] = fmt.Sprintf("namePrefix: %s%d-\nresources: [../../n%d]\n", side, i, i-1)
		}
	}
	return files
}

var bigFile = strings.Repeat("x", 100<<10)

// overBounds: overlays whose build passes a bound; each names what the
// estimate refuses before kustomize runs, and what the output bound refuses
// after it when the estimate is off ("" when kustomize itself refuses it or
// the case would take the test's memory).
var overBounds = map[string]struct {
	files           map[string]string
	estimate, built string
}{
	"generator names one file thousands of times": {
		files: map[string]string{
			"kustomization.yaml": "configMapGenerator: [{name: g, files: [" + repeated("kN=big.txt", ",", 2000) + "]}]\n",
			"big.txt":            bigFile,
		},
		estimate: "at most 134217728 are built", built: "",
	},
	"generator names one file a few hundred times": {
		files: map[string]string{
			"kustomization.yaml": "configMapGenerator: [{name: g, files: [" + repeated("kN=big.txt", ",", 120) + "]}]\n",
			"big.txt":            bigFile,
		},
		estimate: "(MaxOutputBytes)", built: "(MaxOutputBytes)",
	},
	"list entries": {
		files: map[string]string{
			"kustomization.yaml": "configMapGenerator: [{name: g, literals: [" + repeated("kN=v", ",", 10_001) + "]}]\n",
		},
		estimate: "list more than 10000 entries", built: "",
	},
	"many generators": {
		files: map[string]string{
			"kustomization.yaml": "configMapGenerator: [" + repeated("{name: gN, literals: [a=b]}", ",", 1001) + "]\n",
		},
		estimate: "(MaxOutputObjects)", built: "",
	},
	"many documents": {
		files: map[string]string{
			"kustomization.yaml": "resources: [many.yaml]\n",
			"many.yaml":          repeated("{apiVersion: v1, kind: ConfigMap, metadata: {name: cN}}", "\n---\n", 1001),
		},
		estimate: "(MaxOutputObjects)", built: "(MaxOutputObjects)",
	},
	"nested directories built 2^8 times": {
		files:    nested(8),
		estimate: "more than 200 times", built: "",
	},
	"json patch copies doubling": {
		files: map[string]string{
			"kustomization.yaml": "resources: [cm.yaml]\npatches: [{path: p.yaml, target: {kind: ConfigMap, name: big}}]\n",
			"cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big, namespace: default}\ndata:\n  a: " + strings.Repeat("y", 20<<10) + "\n",
			"p.yaml":             repeated("- {op: copy, from: /data, path: /dN}", "\n", 40),
		},
		estimate: "at most 134217728 are built", built: "",
	},
	"replacements copying an object into itself": {
		files: map[string]string{
			"kustomization.yaml": "resources: [cm.yaml]\nreplacements:\n" + repeated("- source: {kind: ConfigMap, name: big, fieldPath: data}\n  targets: [{select: {kind: ConfigMap, name: big}, fieldPaths: [metadata.annotations.rN, data.rN], options: {create: true}}]", "\n", 20) + "\n",
			"cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big, namespace: default}\ndata:\n  a: " + strings.Repeat("y", 1<<10) + "\n",
		},
		estimate: "at most 134217728 are built", built: "",
	},
}

// TestBuildBounds: each overlay is refused before kustomize runs.
func TestBuildBounds(t *testing.T) {
	for name, tc := range overBounds {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			out, err := applyOverlay(t, "", tc.files)
			if err == nil || !strings.Contains(err.Error(), tc.estimate) {
				t.Fatalf("got %d bytes, error %v; want a refusal containing %q", len(out), err, tc.estimate)
			}
			if !strings.Contains(err.Error(), "clusters/x/") {
				t.Errorf("the refusal does not name the file: %v", err)
			}
			t.Logf("%v in %s", err, time.Since(start))
		})
	}
}

// TestOutputBoundHoldsWithoutTheEstimate: with the pre-build estimate off,
// the bounds on what kustomize built still refuse, before it is encoded
// whole.
func TestOutputBoundHoldsWithoutTheEstimate(t *testing.T) {
	skipBuildEstimate = true
	t.Cleanup(func() { skipBuildEstimate = false })
	for name, tc := range overBounds {
		if tc.built == "" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			out, err := applyOverlay(t, "", tc.files)
			var oe *OutputError
			if !errors.As(err, &oe) || !strings.Contains(err.Error(), tc.built) {
				t.Fatalf("got %d bytes, error %v; want an output bound containing %q", len(out), err, tc.built)
			}
		})
	}
}

// BenchmarkOverBound: the generator that names a 100 KiB file 2,000 times
// (200 MB of ConfigMap), with the estimate (refused before kustomize
// runs) and scaled down to 120 times without it (built, then refused by the
// output bound): time and allocation per overlay.
func BenchmarkOverBound(b *testing.B) {
	for _, bc := range []struct {
		name string
		refs int
		skip bool
	}{{"estimate/2000refs", 2000, false}, {"no-estimate/120refs", 120, true}, {"no-estimate/480refs", 480, true}} {
		b.Run(bc.name, func(b *testing.B) {
			skipBuildEstimate = bc.skip
			defer func() { skipBuildEstimate = false }()
			files := map[string]string{
				"kustomization.yaml": "configMapGenerator: [{name: g, files: [" + repeated("kN=big.txt", ",", bc.refs) + "]}]\n",
				"big.txt":            bigFile,
			}
			var peak uint64
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := applyOverlay(b, "", files); err == nil {
					b.Fatal("accepted")
				}
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapSys)
			}
			b.ReportMetric(float64(peak)/(1<<20), "heap-MiB")
		})
	}
}
