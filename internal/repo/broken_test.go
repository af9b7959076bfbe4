package repo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBrokenRecordIsReportedOnce: a record that does not decode is reported
// in its own file only; the allowlists, zones and products that name it do
// not add "unknown cluster" or "unknown org" findings, since its file exists.
func TestBrokenRecordIsReportedOnce(t *testing.T) {
	base := exampleFiles(t)
	cluster := string(base["clusters/gpu-east-1/cluster.yaml"])
	org := string(base["orgs/acme.yaml"])
	cases := []struct {
		name, file, content, want string
	}{
		{"cluster: syntax", "clusters/gpu-east-1/cluster.yaml", strings.Replace(cluster, "region: us-east-1", "region: [us-east-1", 1), "invalid YAML"},
		{"cluster: non-UTF-8 byte", "clusters/gpu-east-1/cluster.yaml", strings.Replace(cluster, "region: us-east-1", "region: us-east-1\xff", 1), "is not UTF-8"},
		{"cluster: NUL", "clusters/gpu-east-1/cluster.yaml", strings.Replace(cluster, "region: us-east-1", "region: us-\x00east-1", 1), "a NUL byte"},
		{"cluster: unknown field", "clusters/gpu-east-1/cluster.yaml", strings.Replace(cluster, "region: us-east-1", "regoin: us-east-1", 1), "unknown field"},
		{"cluster: wrong type", "clusters/gpu-east-1/cluster.yaml", strings.Replace(cluster, "region: us-east-1", "region: {a: b}", 1), "expected a string"},
		{"cluster: empty", "clusters/gpu-east-1/cluster.yaml", "", "empty document"},
		{"cluster: two documents", "clusters/gpu-east-1/cluster.yaml", cluster + "---\na: b\n", "second YAML document"},
		{"org: syntax", "orgs/acme.yaml", strings.Replace(org, "clusterAllowlist", "clusterAllowlist: [", 1), "invalid YAML"},
		{"org: unknown field", "orgs/acme.yaml", org + "  colour: red\n", "unknown field"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files := copyFiles(base)
			files[tc.file] = []byte(tc.content)
			_, errs := LoadFS(NewMemFS(files))
			if len(errs) == 0 {
				t.Fatal("accepted")
			}
			for _, e := range errs {
				if e.File != tc.file {
					t.Errorf("a finding in another file: %v", e)
				}
			}
			if !strings.Contains(errs.Error(), tc.want) {
				t.Errorf("got %v, want %q", errs, tc.want)
			}
			for _, e := range errs {
				if e.Line == 0 && tc.content != "" {
					t.Errorf("no line: %v", e)
				}
			}
		})
	}
}

// TestEveryFindingOfARecordInOneRun: a record with several mistakes of both kinds, some that
// stop a field decoding (an unknown field, a value of the wrong type) and some that the field
// checks find, reports them all in one run; a check on a field that failed to decode does not
// repeat the decoding error.
func TestEveryFindingOfARecordInOneRun(t *testing.T) {
	base := exampleFiles(t)
	cluster := string(base["clusters/gpu-east-1/cluster.yaml"])
	for _, edit := range [][2]string{
		{"  region: us-east-1\n", "  regoin: us-east-1\n"},             // unknown field: region missing
		{"        count: 8\n", "        count: 80\n"},                  // out of range
		{"  environment: prod\n", "  environment: Prod\n"},             // not a slug
		{"    - purpose: inference\n", "    - purpose: [inference]\n"}, // wrong type
	} {
		if !strings.Contains(cluster, edit[0]) {
			t.Fatalf("the example record has no %q", edit[0])
		}
		cluster = strings.Replace(cluster, edit[0], edit[1], 1)
	}
	files := copyFiles(base)
	files["clusters/gpu-east-1/cluster.yaml"] = []byte(cluster)
	_, errs := LoadFS(NewMemFS(files))
	got := map[string]int{}
	for _, e := range errs {
		if e.File != "clusters/gpu-east-1/cluster.yaml" {
			t.Errorf("a finding in another file: %v", e)
		}
		if e.Line == 0 {
			t.Errorf("no line: %v", e)
		}
		got[e.Path]++
	}
	for _, p := range []string{"spec.regoin", "spec.region", "spec.gpu.nodes[0].count", "spec.environment", "spec.registries[0].purpose"} {
		if got[p] != 1 {
			t.Errorf("%d findings on %s, want 1:\n%v", got[p], p, errs)
		}
	}
	if len(errs) != 5 {
		t.Errorf("%d findings, want 5:\n%v", len(errs), errs)
	}
	// The CMP's loader reports the same.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ClusterFile), []byte(cluster), 0o600); err != nil {
		t.Fatal(err)
	}
	_, cmpErrs := LoadCluster(dir, "clusters/gpu-east-1")
	if cmpErrs.Error() != errs.Error() {
		t.Errorf("LoadCluster:\n%v\nLoadFS:\n%v", cmpErrs, errs)
	}
}

func TestPathsOverlap(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"spec.gpu", "spec.gpu.nodes[0].count", true},
		{"spec.gpu.nodes", "spec.gpu.nodes[1]", true},
		{"spec.gpu.nodes[0].count", "spec.gpu", true},
		{"spec.region", "spec.region", true},
		{"", "spec.region", true},
		{"spec.regoin", "spec.region", false},
		{"spec.gpu", "spec.gpuX", false},
		{"spec.queues[1]", "spec.queues[10]", false},
	} {
		if got := pathsOverlap(tc.a, tc.b); got != tc.want {
			t.Errorf("pathsOverlap(%q, %q) = %v", tc.a, tc.b, got)
		}
	}
}
