package repo

import (
	"os"
	"strings"
	"testing"

	"github.com/spokeforge/spokeforge/cmp/render"
	"github.com/spokeforge/spokeforge/internal/validate"
)

// FuzzParseCluster: the record parser and the renderer never panic, and a
// record either renders a non-empty stream or is refused with errors.
func FuzzParseCluster(f *testing.F) {
	for _, p := range []string{"gpu-east-1", "gpu-west-2", "hub-local"} {
		b, err := os.ReadFile("../../examples/gitops/clusters/" + p + "/cluster.yaml")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("apiVersion: spokeforge.io/v1alpha1\nkind: Cluster\nmetadata: {name: a}\nspec: &x {shortName: *x}\n"))
	f.Add([]byte("- 1\n- 2\n"))
	f.Add([]byte("{metadata: {name: [1]}, spec: {queues: {a: b}}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, errs := ParseCluster("cluster.yaml", data)
		if len(errs) > 0 {
			for _, er := range errs {
				if !strings.HasPrefix(er.Error(), "cluster.yaml") {
					t.Fatalf("error does not name the file: %v", er)
				}
			}
			return
		}
		opts := render.Options{Image: "img", ESOVersion: "external-secrets.io/v1", ArgoNamespace: "argocd", RepoURL: "file:///r", TargetRevision: "HEAD", SourcePath: "clusters/x"}
		for mode, fn := range map[string]func(validate.ClusterEntry, render.Options) ([]render.Object, error){"spoke": render.Spoke, "hub": render.Hub} {
			if objs, err := fn(e, opts); err == nil && len(objs) == 0 {
				t.Fatalf("valid record rendered no %s objects without an error", mode)
			}
		}
	})
}
