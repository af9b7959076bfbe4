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
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/spokeforge/spokeforge/cmp"
	"github.com/spokeforge/spokeforge/internal/sopstest"
)

// TestBenchFleet is the fleet benchmark (make bench-fleet; docs/benchmarks.md, "A fleet"): a
// gitops repo of N cluster records on the real hub, their app-of-apps and spoke Applications
// made by the real ApplicationSets and hub renders, every spoke Application compared against
// the one harness spoke with syncs held by a deny sync window; beside it, in the same run, two
// anchors: the same spokes as N plain directories of their rendered YAML (one directory
// Application each, with the same annotation), and the same again with the fleet's topology (a
// plain app-of-apps per spoke that syncs its spoke Application). For each of three commits (one
// record, one org's allowlist, a file no render reads) it reports the CMP renders, the
// repo-server's manifest generations, repo-server, cmp-server (their children included: git,
// spokeforge render) and generator CPU, the bytes
// streamed to the sidecar, the wall time until every Application reports the new revision,
// and peak RSS of repo-server, cmp-server and generator.
//
// After a commit the benchmark asks Argo CD for a normal refresh of every Application (as its
// polling does each timeout.reconciliation, or a webhook), once the repo-server's 10 s cache of
// the branch's revision has passed, and again every 20 s for those not yet at the revision.
//
// Skipped unless SPOKEFORGE_E2E_BENCH_FLEET lists the sizes (e.g. 100,1000);
// SPOKEFORGE_E2E_BENCH_OUT=FILE also writes the table to FILE.
func TestBenchFleet(t *testing.T) {
	spec := os.Getenv("SPOKEFORGE_E2E_BENCH_FLEET")
	if spec == "" {
		t.Skip("set SPOKEFORGE_E2E_BENCH_FLEET=100,1000 to run the fleet benchmark")
	}
	var rows []fleetRow
	for _, s := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 10 {
			t.Fatalf("SPOKEFORGE_E2E_BENCH_FLEET=%q: want sizes of 10 or more", spec)
		}
		for _, layout := range []string{"spokeforge", "plain", "plain-app-of-apps"} {
			t.Run(fmt.Sprintf("%s-%d", layout, n), func(t *testing.T) {
				rows = append(rows, benchFleet(t, n, layout)...)
			})
		}
	}
	table := fleetTable(rows)
	t.Log("\n" + table)
	if out := os.Getenv("SPOKEFORGE_E2E_BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(table), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFleetRepoValidates keeps the benchmark's repo one that spokeforge validate accepts, so
// that what the benchmark renders is a fleet a platform could commit. It needs no hub.
func TestFleetRepoValidates(t *testing.T) {
	key, err := sopstest.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for p, c := range fleetRepo(t, 40, key.Recipient) {
		writeFile(t, filepath.Join(root, filepath.FromSlash(p)), c)
	}
	if _, errs := cmp.Validate(root); len(errs) > 0 {
		t.Fatalf("spokeforge validate refuses the fleet repo:\n%v", errs)
	}
}

// fleetRow is one measured step.
type fleetRow struct {
	N                  int
	Layout, Step       string
	Apps               int
	Renders, Generated int
	RepoCPU, CMPCPU    float64 // seconds
	GenCPU             float64 // seconds; -1 without a generator
	Bytes              int64
	Wall               time.Duration
	RepoRSS, CMPRSS    int64 // KiB, peak during the step
	GenRSS             int64
	RendersPerApp      float64
	BytesPerRender     int64
}

func fleetTable(rows []fleetRow) string {
	var b strings.Builder
	b.WriteString("| N | layout | step | Applications | CMP renders | manifest generations | repo-server CPU s | cmp-server CPU s | generator CPU s | bytes to sidecar | bytes per render | wall s | peak RSS repo-server / cmp-server / generator MiB |\n")
	b.WriteString("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range rows {
		perRender := "–"
		if r.Renders > 0 {
			perRender = fmt.Sprint(r.Bytes / int64(r.Renders))
		}
		genCPU := "–"
		if r.GenCPU >= 0 {
			genCPU = fmt.Sprintf("%.1f", r.GenCPU)
		}
		gen := "–"
		if r.GenRSS > 0 {
			gen = fmt.Sprint(r.GenRSS / 1024)
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %d | %d | %d | %.1f | %.1f | %s | %d | %s | %.1f | %d / %d / %s |\n",
			r.N, r.Layout, r.Step, r.Apps, r.Renders, r.Generated, r.RepoCPU, r.CMPCPU, genCPU, r.Bytes, perRender,
			r.Wall.Seconds(), r.RepoRSS/1024, r.CMPRSS/1024, gen)
	}
	return b.String()
}

const fleetOrgs = 10

func fleetName(i int) string { return fmt.Sprintf("c%04d", i) }

// fleetRecord is cluster i of the fleet: the example records' shapes, varied by i.
func fleetRecord(i int) string {
	n := fleetName(i)
	regions := []string{"us-east-1", "us-west-2", "eu-west-1", "ap-south-1"}
	providers := []string{"equinix", "coreweave", "onprem", "lambda"}
	envs := []string{"prod", "staging", "dev"}
	gpus := []struct {
		product string
		mem     int
	}{{"NVIDIA-A100-SXM4-80GB", 81920}, {"NVIDIA-H100-80GB-HBM3", 81559}, {"NVIDIA-L40S", 46068}}
	region := regions[i%len(regions)]
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: spokeforge.io/v1alpha1
kind: Cluster
metadata:
  name: %[1]s
  labels: {gpu: g%[2]d}
spec:
  shortName: %[1]s
  account: fleet-%[3]d
  accountID: "%012[4]d"
  environment: %[5]s
  region: %[6]s
  zone: dc-%[7]d
  provider: %[8]s
  org: org%02[9]d
  connection:
    server: https://%[1]s.api.example.internal:6443
    credentials: {type: bearerToken}
  identity:
    trustAnchorArn: arn:aws:rolesanywhere:%[6]s:%012[4]d:trust-anchor/0c5d6a3e-1f2b-4c8d-9e0f-1a2b3c4d5e6f
    profileArn: arn:aws:rolesanywhere:%[6]s:%012[4]d:profile/7a8b9c0d-1e2f-4a5b-8c6d-7e8f9a0b1c2d
    issuer: {name: spokeforge-ca}
  network: {podCIDR: 10.42.0.0/16, serviceCIDR: 10.43.0.0/16, dnsServiceIP: 10.43.0.10}
  gpu:
    nodes:
`, n, i%3, i%7, 100000000000+i%7, envs[i%len(envs)], region, i%13, providers[i%len(providers)], i%fleetOrgs)
	for k := 0; k < 1+i%4; k++ {
		g := gpus[(i+k)%len(gpus)]
		fmt.Fprintf(&b, "      - {name: gpu-%02d, product: %s, count: %d, memoryMiB: %d}\n", k+1, g.product, 4+4*(k%2), g.mem)
	}
	b.WriteString("  queues:\n    - purpose: jobs\n")
	if i%2 == 0 {
		b.WriteString("    - {purpose: results, fifo: true}\n")
	}
	if i%3 != 0 {
		b.WriteString("  buckets:\n    - purpose: models\n")
	}
	b.WriteString("  secrets:\n    - {name: model-api-key, namespace: inference, keys: [token]}\n")
	if i%4 == 1 {
		b.WriteString("    - {name: hf-token, namespace: inference, refreshInterval: 30m}\n")
	}
	b.WriteString("  registries:\n    - {purpose: inference, namespaces: [inference]}\n")
	if i%5 == 2 {
		fmt.Fprintf(&b, "  certificates:\n    - {name: inference-serving, namespace: inference, dnsNames: [inference.%s.example.internal]}\n", n)
	}
	return b.String()
}

// fleetRepo is the gitops repo of n records that spokeforge validate accepts: orgs allowlisting
// their clusters, one product per org (a zone on the management cluster, two on clusters), each
// record's secrets as SOPS files encrypted to recipient, one record in ten with an overlay.
func fleetRepo(t testing.TB, n int, recipient string) map[string]string {
	t.Helper()
	files := map[string]string{"README.md": "fleet\n"}
	allow := make([][]string, fleetOrgs)
	for i := range n {
		name := fleetName(i)
		files["clusters/"+name+"/cluster.yaml"] = fleetRecord(i)
		secrets := map[string]map[string]string{"model-api-key": {"token": randomToken(), "spokeforge.io/bound-to": name + "/model-api-key"}}
		if i%4 == 1 {
			secrets["hf-token"] = map[string]string{"token": randomToken(), "spokeforge.io/bound-to": name + "/hf-token"}
		}
		for s, values := range secrets {
			b, err := sopstest.Encrypt(values, recipient)
			if err != nil {
				t.Fatal(err)
			}
			files["clusters/"+name+"/secrets/"+s+".sops.yaml"] = string(b)
		}
		if i%10 == 3 {
			files["clusters/"+name+"/kustomization.yaml"] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" +
				"commonAnnotations:\n  spokeforge.io/site-contact: " + name + "-oncall\n"
		}
		allow[i%fleetOrgs] = append(allow[i%fleetOrgs], name)
	}
	for o := range fleetOrgs {
		org := fmt.Sprintf("org%02d", o)
		files["orgs/"+org+".yaml"] = fleetOrg(org, allow[o])
		var zones strings.Builder
		zones.WriteString("apiVersion: spokeforge.io/v1alpha1\nkind: Product\nmetadata: {name: app}\nspec:\n  delivery:\n    zones:\n")
		fmt.Fprintf(&zones, "      - {name: %s-rc, environment: pre-release}\n", org)
		files[fmt.Sprintf("products/%s/app/%s-rc/configmap.yaml", org, org)] = fmt.Sprintf(
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s-rc}\ndata: {zone: rc}\n", org)
		for k, c := range allow[o][:min(2, len(allow[o]))] {
			fmt.Fprintf(&zones, "      - {name: %s-prod-%d, environment: release, cluster: %s}\n", org, k, c)
		}
		files["products/"+org+"/app.yaml"] = zones.String()
	}
	return files
}

func fleetOrg(name string, allow []string) string {
	// <org>-rc is the org's zone on the management cluster.
	return fmt.Sprintf("apiVersion: spokeforge.io/v1alpha1\nkind: Organization\nmetadata: {name: %[1]s}\nspec:\n  clusterAllowlist: [%[2]s]\n  hubNamespaces: [%[1]s-rc]\n", name, strings.Join(allow, ", "))
}

// benchFleet measures one layout at size n on a hub of its own.
func benchFleet(t *testing.T, n int, layout string) []fleetRow {
	// The controller's own periodic refresh is off (an hour): the benchmark refreshes after
	// each commit, so that what is measured is that commit.
	// Without spokeforge's argoproj.io/Application health check an app-of-apps' sync ends once it
	// has made its spoke Application, which the sync window (or, in plain-app-of-apps, no
	// automated sync) then holds: with it, every app-of-apps would keep a sync operation waiting
	// for a Healthy spoke.
	h := StartHub(t, Options{CountPluginBytes: true, AppResync: time.Hour, NoHealthChecks: layout != "plain"})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Hour)
	defer cancel()
	key, err := sopstest.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	files := fleetRepo(t, n, key.Recipient)
	changed := fleetName(7)
	oneRecord := map[string]string{"clusters/" + changed + "/cluster.yaml": strings.Replace(fleetRecord(7),
		"  queues:\n    - purpose: jobs\n", "  queues:\n    - purpose: jobs\n    - purpose: audit\n", 1)}
	// org03 no longer allowlists its first cluster: the zone placed there is withdrawn.
	var org03 []string
	for i := 3; i < n; i += fleetOrgs {
		org03 = append(org03, fleetName(i))
	}
	orgCommit := map[string]string{"orgs/org03.yaml": fleetOrg("org03", org03[1:])}

	var apps int
	var repo *GitRepo
	switch layout {
	case "spokeforge":
		repo, err = h.NewGitRepo("gitops", files)
		if err != nil {
			t.Fatal(err)
		}
		apps = 2 * n
		fleetHubSetup(ctx, t, h, repo, n)
	case "plain", "plain-app-of-apps":
		// Each spoke's rendered output checked in, one directory per spoke; orgs and products
		// as in the gitops repo (no Application reads them here). plain-app-of-apps adds, per
		// spoke, a directory holding its spoke Application (apps/<cluster>/application.yaml),
		// synced by a directory Application of its own: the fleet's topology (an app-of-apps
		// and a spoke Application per record) in plain YAML.
		aoa := layout == "plain-app-of-apps"
		plain := map[string]string{"README.md": files["README.md"]}
		for p, c := range files {
			if strings.HasPrefix(p, "orgs/") || strings.HasPrefix(p, "products/") {
				plain[p] = c
			}
		}
		work := t.TempDir()
		for p, c := range files {
			if strings.HasPrefix(p, "clusters/") {
				writeFile(t, filepath.Join(work, p), c)
			}
		}
		// The repo's URL is known once it exists: the app-of-apps files name it.
		repo, err = h.NewGitRepo("gitops", map[string]string{"README.md": files["README.md"]})
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			name := fleetName(i)
			plain["plain/"+name+"/spoke.yaml"] = renderSpoke(ctx, t, h, filepath.Join(work, "clusters", name), "clusters/"+name)
			if aoa {
				plain["apps/"+name+"/application.yaml"] = plainApplication("plain-"+name, "plain/"+name, repo.URL, fmt.Sprintf("{name: %s}", SpokeClusterName), false)
			}
		}
		writeFile(t, filepath.Join(work, "clusters", changed, "cluster.yaml"), oneRecord["clusters/"+changed+"/cluster.yaml"])
		oneRecord = map[string]string{"plain/" + changed + "/spoke.yaml": renderSpoke(ctx, t, h, filepath.Join(work, "clusters", changed), "clusters/"+changed)}
		if err := repo.Commit("the fleet", plain); err != nil {
			t.Fatal(err)
		}
		apps = n
		if aoa {
			apps = 2 * n
		}
		for i := range n {
			name := fleetName(i)
			app := plainApplication("plain-"+name, "plain/"+name, repo.URL, fmt.Sprintf("{name: %s}", SpokeClusterName), false)
			if aoa {
				app = plainApplication("apps-"+name, "apps/"+name, repo.URL, fmt.Sprintf("{server: https://kubernetes.default.svc, namespace: %s}", ArgoCDNamespace), true)
			}
			if _, err := h.Hub.Apply(ctx, app); err != nil {
				t.Fatal(err)
			}
		}
	}

	var rows []fleetRow
	m := newFleetMeter(t, h)
	head, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	rows = append(rows, m.step(ctx, t, n, layout, "first sync of the fleet", apps, head))
	for _, c := range []struct {
		step  string
		files map[string]string
	}{
		{"commit: one record", oneRecord},
		{"commit: one org's allowlist", orgCommit},
		{"commit: no file a render reads (README.md)", map[string]string{"README.md": "fleet of " + fmt.Sprint(n) + "\n"}},
	} {
		m.mark(t)
		if err := repo.Commit(c.step, c.files); err != nil {
			t.Fatal(err)
		}
		head, err := repo.Head()
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, m.step(ctx, t, n, layout, c.step, apps, head))
	}
	return rows
}

// fleetHubSetup registers every record's cluster (a cluster Secret per name, all on the one
// harness spoke), holds the spoke Applications' syncs with a deny sync window, applies the orgs'
// AppProjects as render --mode projects makes them, and starts the generator and the two
// example ApplicationSets.
func fleetHubSetup(ctx context.Context, t *testing.T, h *Hub, repo *GitRepo, n int) {
	t.Helper()
	spoke, err := h.Hub.Client.CoreV1().Secrets(ArgoCDNamespace).Get(ctx, SpokeClusterName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		name := fleetName(i)
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "cluster-" + name, Namespace: ArgoCDNamespace,
				Labels: map[string]string{"argocd.argoproj.io/secret-type": "cluster", "spokeforge.io/cluster": name}},
			Data: map[string][]byte{"name": []byte(name), "server": spoke.Data["server"], "config": spoke.Data["config"]},
		}
		if _, err := h.Hub.Client.CoreV1().Secrets(ArgoCDNamespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The hub render makes an ExternalSecret per cluster: the hub gets the External Secrets
	// CRDs, and a stand-in plays its operator (each reports synced; the cluster Secrets above
	// are what Argo CD reads).
	esoDir, err := ModuleDir(ExternalSecretsMod)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Hub.ApplyFiles(ctx, filepath.Join(esoDir, "deploy", "crds", "bundle.yaml")); err != nil {
		t.Fatal(err)
	}
	StartStandInControllers(ctx, h.Hub, "ExternalSecret")
	window := []byte(`{"spec":{"syncWindows":[{"kind":"deny","schedule":"* * * * *","duration":"24h","applications":["spoke-*"],"manualSync":false}]}}`)
	if _, err := h.Hub.Dynamic.Resource(schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "appprojects"}).Namespace(ArgoCDNamespace).Patch(ctx, "default", types.MergePatchType, window, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := h.ApplyRenderedProjects(ctx, repo.Work); err != nil {
		t.Fatal(err)
	}
	gen, err := h.StartGenerator(ctx, repo.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.InstallApplicationSets(ctx, gen.Base, gen.Token); err != nil {
		t.Fatal(err)
	}
}

// plainApplication is a directory Application of the benchmark's anchors, with the same
// manifest-generate-paths as spokeforge's; automated, it syncs (an app-of-apps).
func plainApplication(name, path, repoURL, destination string, automated bool) string {
	sync := ""
	if automated {
		sync = "\n  syncPolicy: {automated: {prune: true}}"
	}
	return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %s
  namespace: %s
  annotations: {argocd.argoproj.io/manifest-generate-paths: .}
spec:
  project: default
  source: {repoURL: %s, targetRevision: main, path: %s}
  destination: %s%s
`, name, ArgoCDNamespace, repoURL, path, destination, sync)
}

// renderSpoke renders recordDir in spoke mode, as the CMP does for sourcePath.
func renderSpoke(ctx context.Context, t *testing.T, h *Hub, recordDir, sourcePath string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, h.Spokeforge, "render")
	cmd.Dir = recordDir
	cmd.Env = append(append(os.Environ(), h.sidecarEnv...), "ARGOCD_APP_SOURCE_PATH="+sourcePath, "KUBE_API_VERSIONS=v1,apps/v1,external-secrets.io/v1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("render %s: %v: %s", sourcePath, err, stderr.String())
	}
	return string(out)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// fleetMeter reads the hub's counters around a step.
type fleetMeter struct {
	h                 *Hub
	cmpLog, repoLog   string
	cmpMark, repoMark int64
	bytesMark         int64
	repoCPU, cmpCPU   float64
	genCPU            float64
	start             time.Time
}

func newFleetMeter(t *testing.T, h *Hub) *fleetMeter {
	m := &fleetMeter{h: h, cmpLog: filepath.Join(h.LogDir, "argocd-cmp-server.log"), repoLog: filepath.Join(h.LogDir, "argocd-repo-server.log")}
	m.start = time.Now()
	m.repoCPU, m.cmpCPU = procCPU(t, h, "argocd-repo-server"), procCPU(t, h, "argocd-cmp-server")
	m.genCPU = generatorCPU(t, h)
	return m
}

// mark starts a step: log offsets, counters, CPU, and peak RSS reset.
func (m *fleetMeter) mark(t *testing.T) {
	m.cmpMark, m.repoMark = logSize(t, m.cmpLog), logSize(t, m.repoLog)
	m.bytesMark = m.h.PluginBytes.Load()
	m.repoCPU, m.cmpCPU = procCPU(t, m.h, "argocd-repo-server"), procCPU(t, m.h, "argocd-cmp-server")
	m.genCPU = generatorCPU(t, m.h)
	for _, p := range []string{"argocd-repo-server", "argocd-cmp-server", "spokeforge-generator"} {
		if pid := procPID(m.h, p); pid > 0 {
			// "5" resets the peak RSS (VmHWM) to the current RSS (proc(5), clear_refs).
			_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0o644)
		}
	}
	m.start = time.Now()
}

// step waits until every Application has compared at revision (refreshing them), then reads
// what the step cost.
func (m *fleetMeter) step(ctx context.Context, t *testing.T, n int, layout, step string, apps int, revision string) fleetRow {
	t.Helper()
	waitFleetRevision(ctx, t, m.h, apps, revision, m.start)
	wall := time.Since(m.start)
	// The renders of the last Applications finish as they report; let the logs catch up.
	time.Sleep(2 * time.Second)
	r := fleetRow{N: n, Layout: layout, Step: step, Apps: apps, Wall: wall}
	r.Renders = countLines(t, m.cmpLog, m.cmpMark, "Plugin command successful")
	r.Generated = manifestMisses(t, m.repoLog, m.repoMark)
	r.RepoCPU = procCPU(t, m.h, "argocd-repo-server") - m.repoCPU
	r.CMPCPU = procCPU(t, m.h, "argocd-cmp-server") - m.cmpCPU
	r.GenCPU = -1
	if m.genCPU >= 0 {
		r.GenCPU = generatorCPU(t, m.h) - m.genCPU
	}
	r.Bytes = m.h.PluginBytes.Load() - m.bytesMark
	r.RepoRSS, r.CMPRSS, r.GenRSS = procHWM(m.h, "argocd-repo-server"), procHWM(m.h, "argocd-cmp-server"), procHWM(m.h, "spokeforge-generator")
	t.Logf("N=%d %s %s: %d renders, %d generations, repo-server %.1f s, cmp-server %.1f s CPU, %d bytes, %s",
		n, layout, step, r.Renders, r.Generated, r.RepoCPU, r.CMPCPU, r.Bytes, wall.Round(100*time.Millisecond))
	return r
}

// waitFleetRevision waits until want Applications exist and have all compared at revision
// without a comparison error. It asks for a normal refresh of those behind, first once the
// repo-server's 10 s revision cache has passed since start, then every 20 s.
func waitFleetRevision(ctx context.Context, t *testing.T, h *Hub, want int, revision string, start time.Time) {
	t.Helper()
	next := start.Add(11 * time.Second)
	deadline := time.Now().Add(150 * time.Minute)
	last := ""
	for {
		list, err := h.Hub.Dynamic.Resource(applicationsGVR).Namespace(ArgoCDNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var behind []string
		total := 0
		for _, a := range list.Items {
			if strings.HasPrefix(a.GetName(), "product-") {
				continue // zone Applications: not part of the fleet's count
			}
			total++
			rev, _, _ := unstructured.NestedString(a.Object, "status", "sync", "revision")
			conds, _, _ := unstructured.NestedSlice(a.Object, "status", "conditions")
			bad := false
			for _, c := range conds {
				if cm, _ := c.(map[string]any); cm["type"] == "ComparisonError" {
					bad = true
					last = fmt.Sprintf("%s: %v", a.GetName(), cm["message"])
				}
			}
			if rev != revision || bad {
				behind = append(behind, a.GetName())
			}
		}
		if total >= want && len(behind) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d Applications; %d not compared at %.8s (first %v; last comparison error %s)", total, want, len(behind), revision, behind[:min(5, len(behind))], last)
		}
		if time.Now().After(next) {
			for _, name := range behind {
				_, _ = h.Hub.Dynamic.Resource(applicationsGVR).Namespace(ArgoCDNamespace).Patch(ctx, name, types.MergePatchType,
					[]byte(`{"metadata":{"annotations":{"argocd.argoproj.io/refresh":"normal"}}}`), metav1.PatchOptions{})
			}
			next = time.Now().Add(20 * time.Second)
		}
		time.Sleep(time.Second)
	}
}

// manifestMisses counts the manifest generations in the repo-server's log after offset: the
// distinct cache keys (app, revision, source) of its "manifest cache miss" lines, which it logs
// once before and once after taking the generation lock.
func manifestMisses(t *testing.T, path string, offset int64) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, line := range strings.Split(string(b[offset:]), "\n") {
		if !strings.Contains(line, `"msg":"manifest cache miss"`) {
			continue
		}
		if m := cacheKey.FindStringSubmatch(line); m != nil {
			keys[m[1]] = true
		}
	}
	return len(keys)
}

var cacheKey = regexp.MustCompile(`"cacheKey":"([^"]*)"`)

func countLines(t *testing.T, path string, offset int64, substr string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b[offset:]), substr)
}

func procPID(h *Hub, name string) int {
	h.mu.Lock()
	p := h.Processes[name]
	h.mu.Unlock()
	if p == nil || p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// procCPU is the CPU seconds of the process and its waited-for children (/proc/PID/stat utime,
// stime, cutime, cstime at 100 ticks a second).
func procCPU(t *testing.T, h *Hub, name string) float64 {
	t.Helper()
	pid := procPID(h, name)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	var ticks float64
	for _, i := range []int{11, 12, 13, 14} { // fields 14-17 of proc(5), after pid and comm
		v, _ := strconv.ParseFloat(f[i], 64)
		ticks += v
	}
	return ticks / 100
}

// generatorCPU is procCPU of the spokeforge generator, -1 when the hub runs none.
func generatorCPU(t *testing.T, h *Hub) float64 {
	if procPID(h, "spokeforge-generator") == 0 {
		return -1
	}
	return procCPU(t, h, "spokeforge-generator")
}

// procHWM is the peak RSS (VmHWM, KiB) of the process; 0 when it does not run.
func procHWM(h *Hub, name string) int64 {
	pid := procPID(h, name)
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			k, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return k
		}
	}
	return 0
}
