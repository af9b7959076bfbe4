package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/template/parse"

	"github.com/spokeforge/spokeforge/internal/api/v1alpha1"
	"github.com/spokeforge/spokeforge/internal/names"
	"github.com/spokeforge/spokeforge/internal/repo"
	"github.com/spokeforge/spokeforge/internal/validate"
)

// TestTemplateActionsEncoded walks every action of every template: an
// action that prints must end in an encoder, so no value reaches the YAML
// text unencoded.
func TestTemplateActionsEncoded(t *testing.T) {
	checked := 0
	for _, tpl := range templates.Templates() {
		if tpl.Tree == nil {
			continue
		}
		var walk func(n parse.Node)
		walk = func(n parse.Node) {
			switch n := n.(type) {
			case *parse.ListNode:
				if n == nil {
					return
				}
				for _, c := range n.Nodes {
					walk(c)
				}
			case *parse.ActionNode:
				if len(n.Pipe.Decl) > 0 {
					return // an assignment prints nothing
				}
				checked++
				last := n.Pipe.Cmds[len(n.Pipe.Cmds)-1]
				id, ok := last.Args[0].(*parse.IdentifierNode)
				if !ok || Encoders[id.Ident] == nil {
					t.Errorf("%s: action %s prints a value without an encoder (end it in | str or | toJson)", tpl.Name(), n)
				}
			case *parse.IfNode:
				walk(n.List)
				walk(n.ElseList)
			case *parse.RangeNode:
				walk(n.List)
				walk(n.ElseList)
			case *parse.WithNode:
				walk(n.List)
				walk(n.ElseList)
			case *parse.TemplateNode:
				t.Errorf("%s: %s: templates are not called from templates here", tpl.Name(), n)
			}
		}
		walk(tpl.Tree.Root)
	}
	if checked < 100 {
		t.Fatalf("only %d printing actions found: the walk is broken", checked)
	}
}

type identity struct{ apiVersion, kind, namespace, name string }

func identities(objs []Object) []identity {
	out := make([]identity, len(objs))
	for i, o := range objs {
		md, _ := o.Obj["metadata"].(map[string]any)
		ns, _ := md["namespace"].(string)
		name, _ := md["name"].(string)
		av, _ := o.Obj["apiVersion"].(string)
		k, _ := o.Obj["kind"].(string)
		out[i] = identity{av, k, ns, name}
	}
	return out
}

func exampleCluster(t testing.TB, name string) validate.ClusterEntry {
	t.Helper()
	dir := filepath.Join("..", "..", "examples", "gitops", "clusters", name)
	e, errs := repo.LoadCluster(dir, dir)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return e
}

var fuzzOptions = Options{Image: "img", ESOVersion: "external-secrets.io/v1", ArgoNamespace: "argocd",
	HubSecretStore: "store", RepoURL: "https://git.example.com/gitops.git", TargetRevision: "main", SourcePath: "clusters/x"}

// plant writes s into every free-text field of c that does not name a
// rendered object, bypassing validation: the encoding alone must hold.
func plant(c *v1alpha1.Cluster, s string) {
	c.Metadata.Labels = map[string]string{s: s, "team": s}
	c.Spec.Identity.Issuer = v1alpha1.IssuerRef{Name: s, Kind: s, Group: s}
	c.Spec.Identity.TrustAnchorArn, c.Spec.Identity.ProfileArn = s, s
	c.Spec.Region = s
	if c.Spec.Connection.Server != "" {
		c.Spec.Connection.Server = s
	}
	for i := range c.Spec.Certificates {
		c.Spec.Certificates[i].Issuer = &v1alpha1.IssuerRef{Name: s, Kind: s, Group: s}
		c.Spec.Certificates[i].DNSNames = []string{s}
	}
	for i := range c.Spec.Workloads {
		c.Spec.Workloads[i].RepoURL, c.Spec.Workloads[i].TargetRevision, c.Spec.Workloads[i].Path = s, s, s
	}
	for i := range c.Spec.Secrets {
		c.Spec.Secrets[i].Keys = []string{s}
		c.Spec.Secrets[i].RefreshInterval = s
	}
	if g := c.Spec.GPU; g != nil {
		for i := range g.Nodes {
			g.Nodes[i].Product, g.Nodes[i].MIGStrategy = s, s
		}
	}
	if st := c.Spec.Storage; st != nil {
		for i := range st.Devices {
			st.Devices[i].Capacity = s
			if st.Devices[i].Safety != nil {
				st.Devices[i].Safety.CheckedAt, st.Devices[i].Safety.CheckedBy = s, s
			}
		}
	}
}

func clone(t testing.TB, e validate.ClusterEntry) validate.ClusterEntry {
	t.Helper()
	data, err := os.ReadFile(e.File)
	if err != nil {
		t.Fatal(err)
	}
	c, errs := repo.ParseCluster(e.File, data)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return c
}

// FuzzRenderIdentities puts arbitrary text (newlines, ---, {{, quotes,
// NUL, invalid UTF-8) into every free-text field and label of the example
// records, skipping validation, and checks every mode renders exactly the
// objects the record's parts call for, each value arriving as data.
func FuzzRenderIdentities(f *testing.F) {
	for _, s := range []string{
		"plain", "a\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: pwn}",
		"x\nobject:\n  kind: Secret", "{{ .C }}", `"'`, "\x00", "\xff\xfe", "a: b", "[1, 2]", "- a", "&a *a", "!!binary AA==",
		"\u2028", "#", "|\n  x", "}", "${HOME}", "",
	} {
		f.Add(s)
	}
	clusters := map[string]validate.ClusterEntry{}
	for _, n := range []string{"gpu-east-1", "gpu-west-2", "hub-local"} {
		clusters[n] = exampleCluster(f, n)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for name, base := range clusters {
			want := map[string][]identity{}
			for mode, fn := range map[string]func(validate.ClusterEntry, Options) ([]Object, error){"spoke": Spoke, "hub": Hub} {
				objs, err := fn(base, fuzzOptions)
				if err != nil {
					t.Fatal(err)
				}
				want[mode] = identities(objs)
			}
			e := clone(t, base)
			plant(e.Cluster, s)
			e.Names, _ = names.Derive(e.Cluster)
			if e.Names == nil {
				e.Names = base.Names
			}
			for mode, fn := range map[string]func(validate.ClusterEntry, Options) ([]Object, error){"spoke": Spoke, "hub": Hub} {
				objs, err := fn(e, fuzzOptions)
				if err != nil {
					continue // refusing is fine; changing structure is not
				}
				got := identities(objs)
				if len(got) != len(want[mode]) {
					t.Fatalf("%s %s: %d objects, want %d: %q changed the structure", name, mode, len(got), len(want[mode]), s)
				}
				for i := range got {
					if got[i] != want[mode][i] {
						t.Fatalf("%s %s: object %d is %+v, want %+v", name, mode, i, got[i], want[mode][i])
					}
				}
				if mode == "spoke" {
					checkIssuerGroup(t, objs, s)
				}
			}
		}
		// projects mode: the org name and the repo URL are the free text.
		o := fuzzOptions
		o.RepoURL = s
		orgs := []validate.OrgEntry{{Org: &v1alpha1.Organization{Metadata: v1alpha1.ObjectMeta{Name: "acme"},
			Spec: v1alpha1.OrganizationSpec{ClusterAllowlist: []string{"gpu-east-1", s}, HubNamespaces: []string{s}}}}}
		objs, err := Projects([]validate.ClusterEntry{clusters["gpu-east-1"]}, orgs, nil, o)
		if err == nil && (len(objs) < 1 || len(objs) > 2 || objs[0].Obj["kind"] != "AppProject") {
			t.Fatalf("projects: %d objects from one org for %q", len(objs), s)
		}
	})
}

// checkIssuerGroup: the planted value arrives as data, unchanged where it
// is valid UTF-8.
func checkIssuerGroup(t *testing.T, objs []Object, s string) {
	if !strings.Contains(s, "\xff") && !strings.Contains(s, "\xfe") && validUTF8(s) {
		for _, o := range objs {
			if o.Obj["kind"] != "Certificate" {
				continue
			}
			spec, _ := o.Obj["spec"].(map[string]any)
			ref, _ := spec["issuerRef"].(map[string]any)
			if s != "" && ref["group"] != s {
				t.Fatalf("issuerRef.group is %q, want %q", ref["group"], s)
			}
		}
	}
}

func validUTF8(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }
