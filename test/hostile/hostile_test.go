package hostile

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/spokeforge/spokeforge/cmp"
	"github.com/spokeforge/spokeforge/generator"
	"github.com/spokeforge/spokeforge/internal/repo"
)

// testImage is the agent image an install sets on the spokeforge sidecar
// (SPOKEFORGE_IMAGE); render refuses a spoke without one.
const testImage = "ghcr.io/spokeforge/spokeforge:v0.1.0-dev"

// Case is one file of cases/.
type Case struct {
	// Cluster whose directory render is run on.
	Cluster string `json:"cluster"`
	// Refuse is a substring every refusal must contain.
	Refuse string `json:"refuse"`
	// Render lists the render modes that must refuse (default spoke and hub);
	// the others must succeed. Validate always refuses.
	Render []string `json:"render"`
	// Secret must appear in no output stream.
	Secret string `json:"secret"`
	// Edits are applied to a copy of examples/gitops in order.
	Edits []Edit `json:"edits"`
}

// Edit changes one file: a text replacement, new content or a symlink.
type Edit struct {
	File    string  `json:"file"`
	Replace string  `json:"replace"`
	With    string  `json:"with"`
	Content *string `json:"content"`
	Symlink string  `json:"symlink"`
	Remove  bool    `json:"remove"`
	// Repeat is appended to Content Times times ({{i}} replaced by the
	// count), then Then: large inputs from small case files.
	Repeat string `json:"repeat"`
	Times  int    `json:"times"`
	Then   string `json:"then"`
}

func loadCases(t *testing.T) map[string]Case {
	t.Helper()
	files, err := filepath.Glob("cases/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	out := map[string]Case{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c Case
		if err := yaml.UnmarshalStrict(b, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if c.Cluster == "" || c.Refuse == "" || len(c.Edits) == 0 {
			t.Fatalf("%s: cluster, refuse and edits are required", f)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".yaml")] = c
	}
	return out
}

// materialise copies the example repo and applies the case's edits.
func materialise(t *testing.T, c Case) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "gitops")
	src := filepath.Join("..", "..", "examples", "gitops")
	if err := os.CopyFS(root, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	_ = os.RemoveAll(filepath.Join(root, "rendered"))
	for _, e := range c.Edits {
		p := filepath.Join(root, filepath.FromSlash(e.File))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		switch {
		case e.Remove:
			if err := os.RemoveAll(p); err != nil {
				t.Fatal(err)
			}
		case e.Symlink != "":
			_ = os.RemoveAll(p)
			if err := os.Symlink(e.Symlink, p); err != nil {
				t.Fatal(err)
			}
		case e.Content != nil:
			b := []byte(*e.Content)
			for i := range e.Times {
				b = append(b, strings.ReplaceAll(e.Repeat, "{{i}}", fmt.Sprint(i))...)
			}
			b = append(b, e.Then...)
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(b, []byte(e.Replace)) {
				t.Fatalf("%s does not contain %q", e.File, e.Replace)
			}
			if err := os.WriteFile(p, bytes.Replace(b, []byte(e.Replace), []byte(e.With), 1), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

// run runs a spokeforge command through the entry point the binary calls
// for it (the binary only parses flags and prints): exit code, stdout, stderr.
func run(args ...string) (int, string, string) {
	switch args[0] {
	case "validate":
		r, errs := cmp.Validate(args[1])
		if len(errs) > 0 {
			return 1, "", errs.Error()
		}
		return 0, fmt.Sprintf("ok: %d clusters\n", len(r.Clusters)), ""
	case "render": // render --mode MODE DIR
		out, err := cmp.Generate(args[3], args[2], os.Getenv)
		if err != nil {
			return 1, string(out), err.Error()
		}
		return 0, string(out), ""
	case "names":
		_, errs := repo.Load(args[1])
		if len(errs) > 0 {
			return 1, "", errs.Error()
		}
		return 0, "names", ""
	}
	panic("unknown command " + args[0])
}

// TestHostileCases: validate and render refuse each case the same way.
func TestHostileCases(t *testing.T) {
	cases := loadCases(t)
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		c := cases[name]
		t.Run(name, func(t *testing.T) {
			root := materialise(t, c)
			var streams []string
			code, out, errs := run("validate", root)
			streams = append(streams, out, errs)
			if code == 0 || !strings.Contains(errs, c.Refuse) {
				t.Errorf("validate: exit %d, stderr %q; want a refusal containing %q", code, errs, c.Refuse)
			}
			refuse := map[string]bool{}
			modes := c.Render
			if len(modes) == 0 {
				modes = []string{"spoke", "hub"}
			}
			for _, m := range modes {
				refuse[m] = true
			}
			dir := filepath.Join(root, "clusters", c.Cluster)
			for _, mode := range []string{"spoke", "hub"} {
				t.Setenv("ARGOCD_APP_SOURCE_REPO_URL", "https://git.example.com/gitops.git")
				t.Setenv("SPOKEFORGE_IMAGE", testImage)
				// The hub serves the cluster inventory API: hub renders also make the ClusterProfile.
				t.Setenv("KUBE_API_VERSIONS", "v1,external-secrets.io/v1,multicluster.x-k8s.io/v1alpha1")
				code, out, errs := run("render", "--mode", mode, dir)
				streams = append(streams, out, errs)
				switch {
				case refuse[mode] && (code == 0 || out != "" || !strings.Contains(errs, c.Refuse)):
					t.Errorf("render --mode %s: exit %d, %d bytes on stdout, stderr %q; want a refusal containing %q and no output", mode, code, len(out), errs, c.Refuse)
				case !refuse[mode] && code != 0:
					t.Errorf("render --mode %s refused: %s", mode, errs)
				}
			}
			code, out, errs = run("names", root)
			streams = append(streams, out, errs)
			if code == 0 && recordCase(c) {
				t.Errorf("names accepted the repo")
			}
			// The generator reads the same files and must refuse the commit too.
			src, err := generator.NewGitSource(generator.GitConfig{Repo: root, App: generator.AppSource{RepoURL: "https://git.example.com/gitops.git", TargetRevision: "main", ArgoNamespace: "argocd"}})
			if err != nil {
				t.Fatal(err)
			}
			st, _ := src.Refresh(t.Context())
			streams = append(streams, st.HeadError, strings.Join(st.HeadErrors, "\n"), st.FetchError)
			if recordCase(c) && st.HeadError == "" {
				t.Errorf("the generator accepted the repo")
			}
			if c.Secret != "" {
				for _, s := range streams {
					if strings.Contains(s, c.Secret) {
						t.Errorf("the planted secret appears in an output stream: %q", s)
					}
				}
			}
		})
	}
}

// recordCase: a case about record files (which the generator reads), not overlays.
func recordCase(c Case) bool {
	for _, e := range c.Edits {
		if strings.HasSuffix(e.File, "cluster.yaml") || strings.HasPrefix(e.File, "orgs/") || strings.HasPrefix(e.File, "products/") || e.File == "clusters/evil" {
			return true
		}
	}
	return false
}

// TestExampleAccepted: the unchanged example passes validate and render,
// so every refusal above is the case's doing.
func TestExampleAccepted(t *testing.T) {
	root := materialise(t, Case{})
	if code, _, errs := run("validate", root); code != 0 {
		t.Fatalf("validate refused the example: %s", errs)
	}
	if _, errs := repo.Load(root); len(errs) > 0 {
		t.Fatal(errs)
	}
}
