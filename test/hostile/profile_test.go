package hostile

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spokeforge/spokeforge/generator"
	"github.com/spokeforge/spokeforge/internal/repo"
)

// profileReason is the ClusterProfile CRD's (metav1.Condition's) reason pattern.
var profileReason = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// FuzzProfileStatusOfRecord: whatever a commit writes into a record that the
// record checks accept, the ClusterProfile status the generator computes
// from it is one the CRD accepts (property names 1–253 bytes and unique,
// values 1–1024, valid reasons, bounded messages: a hostile record cannot
// make the write fail for its profile) and repeats nothing of the record's
// connection credentials.
func FuzzProfileStatusOfRecord(f *testing.F) {
	for _, name := range []string{"gpu-east-1", "gpu-west-2", "hub-local"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", "gitops", "clusters", name, "cluster.yaml"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
		f.Add(strings.Replace(string(b), "      type: bearerToken\n", "      type: bearerToken\n      token: CANARYtok_profile\n", 1))
		f.Add(strings.Replace(string(b), "product: NVIDIA-A100-SXM4-80GB", "product: "+strings.Repeat("A", 63), 1))
	}
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, record string) {
		e, errs := repo.ParseCluster("clusters/x/cluster.yaml", []byte(record))
		if len(errs) > 0 {
			return
		}
		st := generator.ComputeProfileStatus(generator.ProfileInputs{Now: now, Staleness: time.Minute, Cluster: e.Cluster,
			Connection:        &generator.ClusterConnection{Name: e.Cluster.Metadata.Name, Status: "Successful", AttemptedAt: now},
			ConnectionsReadAt: now, OnboardingReadAt: now,
			Onboarding: &generator.OnboardingView{CheckedAt: now, ConnectedAt: now, KubernetesVersion: "v1.31.4", NodeCount: 3,
				Conditions: map[string]generator.OnboardingCondition{"Ready": {Status: "True"}}}})
		seen := map[string]bool{}
		for _, p := range st.Properties {
			if len(p.Name) < 1 || len(p.Name) > 253 || len(p.Value) < 1 || len(p.Value) > 1024 || seen[p.Name] {
				t.Fatalf("property %q = %q (name %d bytes, value %d, seen %v): the CRD refuses it", p.Name, p.Value, len(p.Name), len(p.Value), seen[p.Name])
			}
			seen[p.Name] = true
		}
		for _, c := range st.Conditions {
			if !profileReason.MatchString(c.Reason) || len([]rune(c.Message)) > generator.MaxConditionMessage {
				t.Fatalf("condition %s: reason %q, %d-character message", c.Type, c.Reason, len([]rune(c.Message)))
			}
		}
		b, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "CANARY") {
			t.Fatalf("the status repeats a credential of the record: %s", b)
		}
	})
}
