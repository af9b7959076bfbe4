package repo

import (
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
