//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// fleetSpokes is how many spoke records TestFleetCommit keeps in one repo.
const fleetSpokes = 20

// TestFleetCommit: a gitops repo of 20 spoke records, each with the spoke Application the hub
// render makes (manifest-generate-paths ".", plugin spokeforge), compared by the real
// application-controller against the harness spoke (sync off), on a repo-server set up as
// manifests/cmp sets it (the sidecar gets the annotated paths only). A commit that changes one
// record re-renders that spoke alone; the other 19 report the new revision with their manifests
// unchanged; a commit that touches no record renders nothing.
func TestFleetCommit(t *testing.T) {
	parallel(t)
	h := StartHub(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()

	names := make([]string, fleetSpokes)
	files := map[string]string{"README.md": "fleet\n"}
	for i := range names {
		n := fmt.Sprintf("f%02d", i+1)
		names[i] = n
		files["clusters/"+n+"/cluster.yaml"] = clusterRecord(n, n, "https://"+n+".example.invalid:6443")
		if i%10 == 3 {
			// One in ten carries an overlay, which must reach the sidecar with its directory.
			files["clusters/"+n+"/kustomization.yaml"] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" +
				"commonAnnotations:\n  spokeforge.io/site-contact: " + n + "-oncall\n"
		}
	}
	repo, err := h.NewGitRepo("fleet", files)
	if err != nil {
		t.Fatal(err)
	}
	head1, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}

	// Each record's spoke Application as the hub render makes it, aimed at the harness spoke
	// with sync off: Argo CD still generates and compares every spoke's manifests.
	for _, n := range names {
		app, err := hubSpokeApplication(ctx, h, filepath.Join(repo.Work, "clusters", n), repo.URL, "clusters/"+n)
		if err != nil {
			t.Fatal(err)
		}
		if got := app.GetAnnotations()["argocd.argoproj.io/manifest-generate-paths"]; got != "." {
			t.Fatalf("hub render's %s: manifest-generate-paths %q", app.GetName(), got)
		}
		unstructured.RemoveNestedField(app.Object, "spec", "syncPolicy")
		if err := unstructured.SetNestedField(app.Object, SpokeClusterName, "spec", "destination", "name"); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Hub.ApplyObjects(ctx, app); err != nil {
			t.Fatal(err)
		}
	}
	waitFleetAt(ctx, t, h, names, head1, "the first revision")
	before := fleetManifests(ctx, t, h, names)
	for _, n := range []string{"f04", "f14"} {
		if !strings.Contains(before[n], n+"-oncall") {
			t.Fatalf("spoke-%s's manifests lack its overlay's annotation: the overlay did not reach the sidecar", n)
		}
	}
	cmpLog := filepath.Join(h.LogDir, "argocd-cmp-server.log")

	// One record changes: only its spoke renders.
	mark := logSize(t, cmpLog)
	changed := strings.Replace(files["clusters/f07/cluster.yaml"], "queues: [{purpose: jobs}]", "queues: [{purpose: jobs}, {purpose: results}]", 1)
	if changed == files["clusters/f07/cluster.yaml"] {
		t.Fatal("cannot change f07's record")
	}
	start := time.Now()
	if err := repo.Commit("f07: a results queue", map[string]string{"clusters/f07/cluster.yaml": changed}); err != nil {
		t.Fatal(err)
	}
	head2, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	waitFleetAt(ctx, t, h, names, head2, "the one-record commit")
	t.Logf("one-record commit: all %d spoke Applications at the new revision %s after the commit", len(names), time.Since(start).Round(100*time.Millisecond))
	renders := rendersSince(t, cmpLog, mark)
	if len(renders) != 1 || renders[0] != "f07" {
		t.Fatalf("the one-record commit rendered %v; want [f07] (cmp-server log %s)", renders, cmpLog)
	}
	after := fleetManifests(ctx, t, h, names)
	for _, n := range names {
		switch {
		case n == "f07" && after[n] == before[n]:
			t.Errorf("spoke-f07's manifests did not change with its record")
		case n == "f07" && !strings.Contains(after[n], "results"):
			t.Errorf("spoke-f07's manifests lack the new queue")
		case n != "f07" && after[n] != before[n]:
			t.Errorf("spoke-%s's manifests changed with another record's commit", n)
		}
	}

	// A commit that touches no record renders nothing.
	mark = logSize(t, cmpLog)
	start = time.Now()
	if err := repo.Commit("docs only", map[string]string{"README.md": "fleet of " + fmt.Sprint(fleetSpokes) + "\n"}); err != nil {
		t.Fatal(err)
	}
	head3, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	waitFleetAt(ctx, t, h, names, head3, "the commit that touches no record")
	t.Logf("commit outside clusters/: all at the new revision %s after the commit", time.Since(start).Round(100*time.Millisecond))
	if renders := rendersSince(t, cmpLog, mark); len(renders) != 0 {
		t.Fatalf("a commit that touches no record rendered %v", renders)
	}
}

// hubSpokeApplication renders recordDir in hub mode with spokeforge (as the CMP would for the
// app-of-apps) and returns the spoke Application it makes.
func hubSpokeApplication(ctx context.Context, h *Hub, recordDir, repoURL, sourcePath string) (*unstructured.Unstructured, error) {
	cmd := exec.CommandContext(ctx, h.Spokeforge, "render", "--mode", "hub")
	cmd.Dir = recordDir
	cmd.Env = append(os.Environ(), "ARGOCD_APP_SOURCE_REPO_URL="+repoURL, "ARGOCD_APP_SOURCE_TARGET_REVISION=main",
		"ARGOCD_APP_SOURCE_PATH="+sourcePath, "KUBE_API_VERSIONS=v1,external-secrets.io/v1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("render --mode hub in %s: %v: %s", recordDir, err, stderr.String())
	}
	objs, err := DecodeYAML(bytes.NewReader(out))
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if o.GetKind() == "Application" && o.GetName() == "spoke-"+filepath.Base(recordDir) {
			return o, nil
		}
	}
	return nil, fmt.Errorf("hub render of %s has no spoke Application", recordDir)
}

// waitFleetAt waits until every spoke Application has compared at revision, without error.
func waitFleetAt(ctx context.Context, t *testing.T, h *Hub, names []string, revision, what string) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	for i, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = h.WaitApp(ctx, "spoke-"+n, "compared at "+what, 5*time.Minute, func(s AppState) bool {
				if s.Revision != revision {
					return false
				}
				for _, c := range s.Conditions {
					if strings.HasPrefix(c, "ComparisonError") {
						return false
					}
				}
				return true
			})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// fleetManifests returns each spoke Application's manifests as argocd-server serves them.
func fleetManifests(ctx context.Context, t *testing.T, h *Hub, names []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, n := range names {
		m, err := h.ArgoCD(ctx, "app", "manifests", "spoke-"+n)
		if err != nil {
			t.Fatal(err)
		}
		out[n] = m
	}
	return out
}

func logSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// renderedCluster finds the cluster a render's output belongs to in the cmp-server's debug
// line that logs it.
var renderedCluster = regexp.MustCompile(`spokeforge\.io/cluster: (f[0-9]{2})`)

// rendersSince lists, sorted, the cluster of every render the cmp-server ran after offset in its
// log: each successful command logs its output (debug) and "Plugin command successful".
func rendersSince(t *testing.T, path string, offset int64) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var clusters []string
	var successes int
	for _, line := range strings.Split(string(b[offset:]), "\n") {
		if strings.Contains(line, "Plugin command successful") {
			successes++
			continue
		}
		// The debug line that logs a command's output, in JSON (the harness's format) or text.
		if (strings.Contains(line, `"level":"debug"`) && strings.Contains(line, `"duration":`)) ||
			(strings.Contains(line, "level=debug") && strings.Contains(line, "duration=")) {
			if m := renderedCluster.FindStringSubmatch(line); m != nil {
				clusters = append(clusters, m[1])
			}
		}
	}
	if successes != len(clusters) {
		t.Fatalf("cmp-server log: %d successful commands, %d outputs naming a cluster", successes, len(clusters))
	}
	sort.Strings(clusters)
	return clusters
}
