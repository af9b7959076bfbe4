package repo

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/spokeforge/spokeforge/internal/record"
)

// exampleFiles is the example repo's record files.
func exampleFiles(t *testing.T) map[string][]byte {
	t.Helper()
	files, errs := ReadFiles("../../examples/gitops")
	if len(errs) > 0 || len(files) == 0 {
		t.Fatalf("example repo: %v", errs)
	}
	return files
}

// TestLoaderEqualsFullLoad: a Loader fed commit after commit returns exactly
// what a full LoadFS returns for each, findings included, and re-parses only
// the files whose path or hash changed.
func TestLoaderEqualsFullLoad(t *testing.T) {
	base := exampleFiles(t)
	org := func(name, allow string) string {
		return "apiVersion: spokeforge.io/v1alpha1\nkind: Organization\nmetadata: {name: " + name + "}\nspec: {clusterAllowlist: [" + allow + "]}\n"
	}
	steps := []struct {
		name   string
		edits  map[string]string // "" deletes
		parsed int               // files parsed (not reused) by the Loader
		errs   bool
	}{
		{"first load", nil, len(base), false},
		{"same commit again", nil, 0, false},
		{"one org changed", map[string]string{"orgs/globex.yaml": org("globex", "gpu-west-2, hub-local")}, 1, false},
		{"hostile bytes", map[string]string{"orgs/globex.yaml": "\x00\xff\xfe: [\n\t\x1b"}, 1, true},
		{"unknown field", map[string]string{"orgs/globex.yaml": org("globex", "gpu-west-2") + "  colour: red\n"}, 1, true},
		{"back to a seen content", map[string]string{"orgs/globex.yaml": org("globex", "gpu-west-2, hub-local")}, 1, false},
		{"same bytes at another path", map[string]string{"orgs/initech.yaml": org("globex", "gpu-west-2, hub-local")}, 1, true},
		{"copy removed, cluster removed", map[string]string{"orgs/initech.yaml": "", "clusters/gpu-west-2/cluster.yaml": ""}, 0, true},
		{"cluster back under another directory", map[string]string{"clusters/gpu-west-3/cluster.yaml": string(base["clusters/gpu-west-2/cluster.yaml"])}, 1, true},
		{"all back", map[string]string{"clusters/gpu-west-3/cluster.yaml": "", "clusters/gpu-west-2/cluster.yaml": string(base["clusters/gpu-west-2/cluster.yaml"])}, 1, false},
		// Every cross-file rule, read from trimmed lines (the reused
		// records) and from whole ones (LoadFS) alike.
		{"cross-file findings", map[string]string{
			"clusters/gpu-west-9/cluster.yaml": strings.Replace(string(base["clusters/gpu-west-2/cluster.yaml"]), "  name: gpu-west-2\n", "  name: gpu-west-9\n", 1),
			"clusters/product/cluster.yaml":    strings.Replace(string(base["clusters/gpu-east-1/cluster.yaml"]), "  name: gpu-east-1\n", "  name: product\n", 1),
			"products/initech/dup.yaml": "apiVersion: spokeforge.io/v1alpha1\nkind: Product\nmetadata:\n  name: dup\nspec:\n  delivery:\n    zones:\n" +
				"      - name: checkout-rc\n        environment: release\n      - name: inference\n        environment: release\n        cluster: gpu-north-1\n",
			"orgs/globex.yaml": org("globex", "gpu-west-2, hub-local, gpu-south-3"),
		}, 4, true},
		{"same findings, all reused", nil, 0, true},
	}
	files := map[string][]byte{}
	for k, v := range base {
		files[k] = v
	}
	var l Loader
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			for p, c := range st.edits {
				if c == "" {
					delete(files, p)
				} else {
					files[p] = []byte(c)
				}
			}
			fullRepo, fullErrs := LoadFS(NewMemFS(copyFiles(files)))
			got, gotErrs := l.Load(NewMemFS(copyFiles(files)))
			// The Loader keeps only the lines the cross-file rules read;
			// the findings below are compared whole.
			trimLines(fullRepo)
			if !reflect.DeepEqual(got, fullRepo) {
				t.Errorf("incremental repo differs from the full load")
			}
			if !reflect.DeepEqual(gotErrs, fullErrs) {
				t.Errorf("incremental findings differ:\n got %v\nwant %v", gotErrs, fullErrs)
			}
			if st.name == "cross-file findings" {
				codes := map[record.Code]bool{}
				for _, e := range gotErrs {
					codes[e.Code] = true
				}
				for _, c := range []record.Code{record.CodeCloudNameCollision, record.CodeApplicationClash, record.CodeDuplicateZone,
					record.CodeUnknownOrg, record.CodeUnknownCluster} {
					if !codes[c] {
						t.Errorf("no %s finding among %v", c, gotErrs)
					}
				}
			}
			if (len(gotErrs) > 0) != st.errs {
				t.Errorf("findings %v, want any: %v", gotErrs, st.errs)
			}
			if l.Parsed != st.parsed || l.Reused+l.Parsed != len(files) {
				t.Errorf("parsed %d reused %d of %d files, want %d parsed", l.Parsed, l.Reused, len(files), st.parsed)
			}
		})
	}
}

// TestLoaderBlobs: a git tree's blobs are read only when their hash is new,
// a read failure is a finding that is not remembered, and a folder and a
// tree of the same bytes share hashes.
func TestLoaderBlobs(t *testing.T) {
	files := exampleFiles(t)
	reads := map[string]int{}
	failing := ""
	blobs := func() map[string]Blob {
		m := map[string]Blob{}
		for p, data := range files {
			h, _ := NewMemFS(map[string][]byte{p: data}).Hash(p)
			m[p] = Blob{Hash: h, Size: int64(len(data)), Read: func() ([]byte, error) {
				reads[p]++
				if p == failing {
					return nil, errors.New("object not found")
				}
				return append([]byte(nil), data...), nil
			}}
		}
		return m
	}
	var l Loader
	if _, errs := l.Load(NewBlobFS(blobs())); len(errs) > 0 {
		t.Fatal(errs)
	}
	failing = "orgs/acme.yaml"
	delete(reads, failing)
	_, errs := l.Load(NewBlobFS(blobs()))
	if len(errs) != 0 || reads[failing] != 0 {
		t.Fatalf("an unchanged blob was read (%d) or failed: %v", reads[failing], errs)
	}
	files[failing] = append(files[failing], []byte("# changed\n")...)
	_, errs = l.Load(NewBlobFS(blobs()))
	if len(errs) == 0 || !strings.Contains(errs.Error(), "orgs/acme.yaml: readfile orgs/acme.yaml: object not found") {
		t.Fatalf("a failed read: %v", errs)
	}
	failing = ""
	if _, errs = l.Load(NewBlobFS(blobs())); len(errs) != 0 || l.Parsed != 1 {
		t.Fatalf("after a failed read the blob is read again: parsed %d, %v", l.Parsed, errs)
	}
}

func trimLines(r *Repo) {
	for i := range r.Clusters {
		r.Clusters[i].TrimLines(nil)
	}
	for i := range r.Orgs {
		r.Orgs[i].TrimLines(nil)
	}
	for i := range r.Products {
		r.Products[i].TrimLines(nil)
	}
}

func copyFiles(m map[string][]byte) map[string][]byte {
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestMemFSHashIsGitBlobHash: the hash of a byte file is git's blob id.
func TestMemFSHashIsGitBlobHash(t *testing.T) {
	for data, want := range map[string]string{
		"":              "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391",
		"hello world\n": "3b18e512dba79e4c8300dd08aeb37f8e728b8dad",
	} {
		if got, _ := NewMemFS(map[string][]byte{"f": []byte(data)}).Hash("f"); got != want {
			t.Errorf("hash of %q = %s, want %s", data, got, want)
		}
	}
	if _, ok := NewMemFS(nil).Hash("missing"); ok {
		t.Error("a missing file has a hash")
	}
}
