package generator

import (
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/spokeforge/spokeforge/cmp/render"
)

func paramsOf(t *testing.T, f *fixture, kind string) []map[string]any {
	t.Helper()
	code, body := f.do(t, "POST", "/api/v1/getparams.execute", `{"input":{"parameters":{"kind":"`+kind+`"}}}`, okHeaders)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	var r Response
	if err := yaml.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	return r.Output.Parameters
}

// TestParamsAgreeWithHubRender: the app-of-apps the clusters ApplicationSet makes from these
// parameters (test/conformance-v3 runs Argo CD's own generator and template on them) has the
// CMP render the hub objects; those must use the destination and projects the generator
// announced, and no hub Application may carry a finalizer (the app-of-apps cascades to the hub
// objects it synced and must stop there).
func TestParamsAgreeWithHubRender(t *testing.T) {
	snap := mustSnapshot(t, exampleFS(t, nil), "c1")
	f := newFixture(t, &staticSource{snap: snap}, registeredHub())
	params := paramsOf(t, f, KindClusters)
	if len(params) != len(snap.Repo.Clusters) {
		t.Fatalf("%d parameter sets for %d clusters", len(params), len(snap.Repo.Clusters))
	}
	for _, entry := range snap.Repo.Clusters {
		cluster := entry.Cluster.Metadata.Name
		var p map[string]any
		for _, q := range params {
			if q["name"] == cluster {
				p = q
			}
		}
		if p == nil {
			t.Fatalf("no parameters for %s", cluster)
		}
		// As the app-of-apps runs the CMP: its destination namespace, repoURL, revision and path.
		objs, err := render.Hub(entry, render.Options{ESOVersion: "external-secrets.io/v1", ArgoNamespace: testSource.ArgoNamespace,
			HubSecretStore: "spokeforge-hub", RepoURL: testSource.RepoURL, TargetRevision: testSource.TargetRevision, SourcePath: "clusters/" + cluster})
		if err != nil {
			t.Fatal(err)
		}
		dest := p["destination"].(map[string]any)
		found := false
		for _, o := range objs {
			md := o.Obj["metadata"].(map[string]any)
			if o.Obj["kind"] == "Application" && md["finalizers"] != nil {
				t.Errorf("hub render of %s: Application %v carries finalizers %v: deleting it would delete spoke objects", cluster, md["name"], md["finalizers"])
			}
			if o.Boundary == "hub-workloads" {
				// Workload Applications go through the org's AppProject the generator announces.
				if proj := o.Obj["spec"].(map[string]any)["project"]; proj != p["workloadProject"] || proj == "" {
					t.Errorf("%s: workload Application %v in project %v, generator says workloadProject %v", cluster, md["name"], proj, p["workloadProject"])
				}
			}
			if o.Obj["kind"] != "Application" || md["name"] != p["spokeApplication"] {
				continue
			}
			found = true
			spec := o.Obj["spec"].(map[string]any)
			rd := spec["destination"].(map[string]any)
			if (rd["name"] == nil && dest["name"] != "") || (rd["name"] != nil && rd["name"] != dest["name"]) ||
				(rd["server"] == nil && dest["server"] != "") || (rd["server"] != nil && rd["server"] != dest["server"]) {
				t.Errorf("%s: rendered spoke Application destination %v, generator says %v", cluster, rd, dest)
			}
			src := spec["source"].(map[string]any)
			if spec["project"] != p["project"] || src["path"] != p["path"] || src["repoURL"] != p["repoURL"] ||
				src["plugin"].(map[string]any)["name"] != p["plugin"] {
				t.Errorf("%s: rendered spoke Application %v disagrees with parameters %v", cluster, spec, p)
			}
		}
		if !found {
			t.Errorf("%s: the hub render has no Application %v", cluster, p["spokeApplication"])
		}
	}
}
