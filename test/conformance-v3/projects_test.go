package conformance

import (
	"encoding/json"
	"path/filepath"
	"testing"

	argov1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/spokeforge/spokeforge/cmp/render"
	"github.com/spokeforge/spokeforge/internal/api/v1alpha1"
	"github.com/spokeforge/spokeforge/internal/hubpolicy"
	"github.com/spokeforge/spokeforge/internal/names"
	"github.com/spokeforge/spokeforge/internal/record"
	"github.com/spokeforge/spokeforge/internal/repo"
	"github.com/spokeforge/spokeforge/internal/validate"
)

// projectsTestOptions are an install's render options (projects mode reads
// the Argo CD namespace and the repo URL).
var projectsTestOptions = render.Options{ArgoNamespace: "argocd", RepoURL: "https://git.example.com/gitops.git", TargetRevision: "HEAD"}

// exampleProject is the AppProject projects mode renders for org from
// examples/gitops, as Argo CD decodes it.
func exampleProject(t *testing.T, r *repo.Repo, org string) argov1.AppProject {
	t.Helper()
	objs, err := render.Projects(r.Clusters, r.Orgs, r.Products, projectsTestOptions)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.Obj["kind"] != "AppProject" || o.Obj["metadata"].(map[string]any)["name"] != names.OrgProject(org) {
			continue
		}
		b, err := json.Marshal(o.Obj)
		if err != nil {
			t.Fatal(err)
		}
		var p argov1.AppProject
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Fatalf("no AppProject for org %s", org)
	return argov1.AppProject{}
}

// TestOrgProjectKinds: Argo CD's own permission check (IsGroupKindNamePermitted)
// on the rendered org AppProject admits exactly hubpolicy.ZoneKinds among
// the kinds a zone might try, and none that reads secrets through a
// platform store, holds a credential or grants RBAC.
func TestOrgProjectKinds(t *testing.T) {
	r, errs := repo.Load(filepath.Join("..", "..", "examples", "gitops"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	p := exampleProject(t, r, "acme")
	for _, k := range hubpolicy.ZoneKinds {
		if !p.IsGroupKindNamePermitted(schema.GroupKind{Group: k.Group, Kind: k.Kind}, "", true) {
			t.Errorf("%s/%s is listed in hubpolicy.ZoneKinds but the project refuses it", k.Group, k.Kind)
		}
	}
	for _, k := range []struct {
		group, kind string
		namespaced  bool
	}{
		{"", "Secret", true}, {"", "Pod", true}, {"", "Endpoints", true}, {"discovery.k8s.io", "EndpointSlice", true},
		{"", "ResourceQuota", true}, {"", "LimitRange", true}, {"apps", "DaemonSet", true},
		{"external-secrets.io", "SecretStore", true}, {"external-secrets.io", "ExternalSecret", true},
		{"external-secrets.io", "PushSecret", true}, {"external-secrets.io", "ClusterSecretStore", false},
		{"external-secrets.io", "ClusterExternalSecret", false}, {"generators.external-secrets.io", "ECRAuthorizationToken", true},
		{"generators.external-secrets.io", "ClusterGenerator", false},
		{"rbac.authorization.k8s.io", "Role", true}, {"rbac.authorization.k8s.io", "RoleBinding", true},
		{"rbac.authorization.k8s.io", "ClusterRole", false}, {"rbac.authorization.k8s.io", "ClusterRoleBinding", false},
		{"cert-manager.io", "Certificate", true}, {"cert-manager.io", "Issuer", true}, {"cert-manager.io", "ClusterIssuer", false},
		{"argoproj.io", "Application", true}, {"argoproj.io", "AppProject", true},
		{"", "PersistentVolume", false}, {"storage.k8s.io", "StorageClass", false}, {"nfd.k8s-sigs.io", "NodeFeatureRule", false},
		{"apiextensions.k8s.io", "CustomResourceDefinition", false}, {"admissionregistration.k8s.io", "MutatingWebhookConfiguration", false},
	} {
		if p.IsGroupKindNamePermitted(schema.GroupKind{Group: k.group, Kind: k.kind}, "", k.namespaced) {
			t.Errorf("the org project admits %s/%s", k.group, k.kind)
		}
	}
}

// TestZoneNamespacesAsTheProjectDecides: validate refuses a zone on the
// management cluster exactly where Argo CD's destination check
// (IsDestinationPermitted) on the rendered org AppProject refuses it: both
// come from the org's spec.hubNamespaces.
func TestZoneNamespacesAsTheProjectDecides(t *testing.T) {
	r, errs := repo.Load(filepath.Join("..", "..", "examples", "gitops"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	p := exampleProject(t, r, "acme")
	for _, ns := range []string{"checkout-rc", "argocd", "external-secrets", "cert-manager", "kube-system", "kube-public",
		"spokeforge-system", "default", "platform", "training", "checkout-prod", "checkout-rc-2"} {
		for _, cluster := range []string{"", "hub-local"} {
			permitted, err := p.IsDestinationPermitted(&argov1.Cluster{Server: names.InClusterServer, Name: "in-cluster"}, ns, nil)
			if err != nil {
				t.Fatal(err)
			}
			products := append([]validate.ProductEntry(nil), r.Products...)
			for i, pe := range products {
				if pe.Org != "acme" {
					continue
				}
				prod := *pe.Product
				prod.Spec.Delivery.Zones = []v1alpha1.Zone{{Name: "probe", Environment: "release", Cluster: cluster, Namespace: ns}}
				products[i].Product = &prod
			}
			refused := false
			for _, e := range validate.CrossFile(r.Clusters, r.Orgs, products, validate.Present{}) {
				refused = refused || (e.Code == record.CodeHubNamespace && e.File == "products/acme/checkout.yaml")
			}
			if refused == permitted {
				t.Errorf("zone on cluster %q in namespace %s: the project permits it: %v, validate refuses it: %v", cluster, ns, permitted, refused)
			}
		}
	}
}
