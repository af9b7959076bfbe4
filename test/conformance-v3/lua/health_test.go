package lua

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/gitops-engine/v3/pkg/health"
	argolua "github.com/argoproj/argo-cd/v3/util/lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func TestHealthFixtures(t *testing.T) {
	scripts := loadScripts(t)
	files, err := luaGlob(filepath.Join("*", "*", "health_test.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no health_test.yaml: %v", err)
	}
	perScript := map[string]int{}
	for _, f := range files {
		dir := filepath.Dir(f)
		b, err := os.ReadFile(filepath.Join(luaDir, f))
		if err != nil {
			t.Fatal(err)
		}
		var ht healthTests
		if err := yaml.Unmarshal(b, &ht); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		perScript[dir] = len(ht.Tests)
		for _, tc := range ht.Tests {
			t.Run(dir+"/"+tc.InputPath, func(t *testing.T) {
				obj := loadObj(t, filepath.Join(dir, tc.InputPath))
				if got := groupDir(obj); got != dir {
					t.Fatalf("fixture is a %s, not a %s", got, dir)
				}
				for _, form := range forms {
					for _, zone := range controllerZones {
						for _, open := range []bool{false, true} {
							// Argo CD's default sandbox (false) is what argocd-cm
							// scripts get; open libs (true) is what upstream's own
							// tests use, checked so the script behaves the same there.
							vm := argolua.VM{ResourceOverrides: overridesOf(scripts, form.shipped)}
							script, _, err := vm.GetHealthScript(obj)
							if err != nil {
								t.Fatal(err)
							}
							vm.UseOpenLibs = open
							got, err := inZone(zone, func() (*health.HealthStatus, error) { return vm.ExecuteHealthLua(obj, script) })
							if err != nil {
								t.Fatalf("%s, %s, useOpenLibs=%v: %v", form.name, zone, open, err)
							}
							if *got != tc.HealthStatus {
								t.Errorf("%s, %s, useOpenLibs=%v:\n got %q %q\nwant %q %q", form.name, zone, open, got.Status, got.Message, tc.HealthStatus.Status, tc.HealthStatus.Message)
							}
						}
					}
				}
			})
		}
	}
	for _, s := range scripts {
		if n := perScript[s.Dir]; n < 6 {
			t.Errorf("%s has %d fixtures, want at least 6", s.Dir, n)
		}
	}
}

// randomValue returns an arbitrary JSON-like value, biased towards the shapes
// and wrong types that show up in half-written status blocks.
func randomValue(r *rand.Rand, depth int) interface{} {
	strs := []string{"", "True", "False", "Unknown", "Ready", "Issuing", "Identity", "Queues", "Warning", "Error",
		"PendingApproval", "Pending", "SecretSyncedError", "Secret does not exist", "ResourceNotFoundException",
		"2026-01-01T00:00:00Z", "2999-01-01T00:00:00Z", "2026-13-45T99:99:99Z", "2026-01-01T00:00:00+99:99", "\xff\xfe", "não encontrado ✓"}
	switch k := r.Intn(10); {
	case k == 0 || depth > 4:
		return strs[r.Intn(len(strs))]
	case k == 1:
		return r.NormFloat64() * 1e6
	case k == 2:
		return int64(r.Intn(100) - 50)
	case k == 3:
		return r.Intn(2) == 0
	case k == 4:
		return nil
	case k == 5:
		return strings.Repeat("x", r.Intn(5000))
	case k <= 7:
		n := r.Intn(5)
		a := make([]interface{}, n)
		for i := range a {
			a[i] = randomValue(r, depth+1)
		}
		return a
	default:
		keys := []string{"type", "status", "reason", "message", "severity", "observedGeneration", "lastTransitionTime",
			"conditions", "failedIssuanceAttempts", "lastFailureTime", "health", "operationState", "phase", "x"}
		m := map[string]interface{}{}
		for i := r.Intn(6); i >= 0; i-- {
			m[keys[r.Intn(len(keys))]] = randomValue(r, depth+1)
		}
		return m
	}
}

func randomCondition(r *rand.Rand, bigMsg string) interface{} {
	if r.Intn(8) == 0 {
		return randomValue(r, 3)
	}
	types := []string{"Identity", "Secrets", "Certificates", "Registry", "Queues", "Storage", "Workload", "Ready", "Issuing"}
	c := map[string]interface{}{
		"type":   types[r.Intn(len(types))],
		"status": []interface{}{"True", "False", "Unknown", 1.0, nil}[r.Intn(5)],
		"reason": []interface{}{"SecretSyncedError", "PendingIssuer", "Failed", 42.0, nil, map[string]interface{}{}}[r.Intn(6)],
	}
	switch r.Intn(5) {
	case 0:
		c["message"] = bigMsg
	case 1:
		c["message"] = 3.5
	case 2:
		c["message"] = []interface{}{"a"}
	default:
		c["message"] = "Secret does not exist"
	}
	if r.Intn(2) == 0 {
		c["severity"] = []interface{}{"Warning", "Error", "Info", 7.0}[r.Intn(4)]
	}
	return c
}

func TestScriptsNeverError(t *testing.T) {
	scripts := loadScripts(t)
	mib := strings.Repeat("é does not exist ", 1<<20/18)
	bigMsgNotFound := mib[:len(mib)-1] + "\xc3"

	type mutation struct {
		name   string
		status interface{}
		meta   map[string]interface{}
	}
	fixed := []mutation{
		{"no status", nil, nil},
		{"status string", "Ready", nil},
		{"status number", 12.0, nil},
		{"status list", []interface{}{"a", 1.0}, nil},
		{"conditions string", map[string]interface{}{"conditions": "Ready=True"}, nil},
		{"conditions number", map[string]interface{}{"conditions": 3.0}, nil},
		{"conditions map", map[string]interface{}{"conditions": map[string]interface{}{"Ready": map[string]interface{}{"status": "False", "message": mib}, "Identity": "True"}}, nil},
		{"condition strings", map[string]interface{}{"conditions": []interface{}{"Ready", "Identity", 1.0, true, nil}}, nil},
		{"numbers where strings go", map[string]interface{}{"conditions": []interface{}{map[string]interface{}{"type": 1.0, "status": 2.0, "reason": 3.0, "message": 4.0, "severity": 5.0}}, "failedIssuanceAttempts": "9", "lastFailureTime": 12.0, "observedGeneration": "x"}, map[string]interface{}{"generation": "2", "creationTimestamp": 5.0, "name": 1.0, "namespace": []interface{}{}}},
		{"huge attempts", map[string]interface{}{"conditions": []interface{}{map[string]interface{}{"type": "Ready", "status": "False", "message": mib}}, "failedIssuanceAttempts": 1e308, "lastFailureTime": mib}, nil},
		{"1 MiB not-found message in grace", map[string]interface{}{"conditions": []interface{}{map[string]interface{}{"type": "Ready", "status": "False", "reason": "SecretSyncedError", "message": bigMsgNotFound}}}, map[string]interface{}{"creationTimestamp": "2999-01-01T00:00:00Z"}},
		{"1 MiB timestamp", map[string]interface{}{"conditions": []interface{}{map[string]interface{}{"type": "Ready", "status": "False", "reason": "SecretSyncedError", "message": "not found"}}}, map[string]interface{}{"creationTimestamp": mib}},
		{"huge health", map[string]interface{}{"health": map[string]interface{}{"status": "Degraded", "message": mib}, "operationState": map[string]interface{}{"phase": "Failed", "message": mib}}, nil},
		{"health wrong types", map[string]interface{}{"health": "Healthy", "operationState": []interface{}{"Failed"}}, nil},
		{"onboarding all false 1 MiB", map[string]interface{}{"observedGeneration": 1.0, "conditions": []interface{}{
			map[string]interface{}{"type": "Identity", "status": "False", "reason": mib, "message": mib, "severity": mib}}}, map[string]interface{}{"generation": 1.0}},
	}
	// Shapes the fast paths (fast.lua) read first: thousands of conditions before the one that
	// decides, a message one byte over their 4 KiB bound cut inside a UTF-8 sequence, a
	// 20-byte creationTimestamp of bytes that sort below any date, attempts as a huge string.
	many := make([]interface{}, 0, 10001)
	for i := 0; i < 10000; i++ {
		many = append(many, map[string]interface{}{"type": "Other", "status": "True"})
	}
	many = append(many, map[string]interface{}{"type": "Ready", "status": "True", "message": strings.Repeat("é", 2048) + "\xc3"})
	fixed = append(fixed,
		mutation{"10,000 conditions, then a Ready of 4 KiB and a cut rune", map[string]interface{}{"conditions": many}, nil},
		mutation{"20-byte timestamp below every date", map[string]interface{}{"conditions": []interface{}{map[string]interface{}{"type": "Ready", "status": "False", "reason": "SecretSyncedError", "message": "not found"}}},
			map[string]interface{}{"creationTimestamp": "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13"}},
		mutation{"backoff with a 20-byte lastFailureTime of 0xff", map[string]interface{}{"conditions": []interface{}{map[string]interface{}{"type": "Ready", "status": "False", "message": "x"}},
			"failedIssuanceAttempts": 3.0, "lastFailureTime": strings.Repeat("\xff", 20)}, map[string]interface{}{"name": strings.Repeat("n", 1<<20)}},
	)
	r := rand.New(rand.NewSource(1))
	var cases []mutation
	cases = append(cases, fixed...)
	for i := 0; i < 150; i++ {
		var st interface{}
		switch r.Intn(4) {
		case 0:
			st = randomValue(r, 0)
		default:
			conds := make([]interface{}, r.Intn(10))
			for j := range conds {
				msg := "short"
				if r.Intn(20) == 0 {
					msg = mib
				}
				conds[j] = randomCondition(r, msg)
			}
			m := map[string]interface{}{"conditions": conds}
			for _, k := range []string{"observedGeneration", "failedIssuanceAttempts", "lastFailureTime", "health", "operationState", "connected"} {
				if r.Intn(2) == 0 {
					m[k] = randomValue(r, 2)
				}
			}
			st = m
		}
		meta, _ := randomValue(r, 2).(map[string]interface{})
		if r.Intn(2) == 0 {
			meta = map[string]interface{}{"generation": float64(r.Intn(3)), "creationTimestamp": []string{"2999-01-01T00:00:00Z", "2020-01-01T00:00:00Z", "bad"}[r.Intn(3)]}
		}
		cases = append(cases, mutation{fmt.Sprintf("random-%03d", i), st, meta})
	}

	for _, form := range forms {
		vm := argolua.VM{ResourceOverrides: overridesOf(scripts, form.shipped)}
		for _, s := range scripts {
			for _, tc := range cases {
				t.Run(form.name+"/"+s.Dir+"/"+tc.name, func(t *testing.T) {
					obj := map[string]interface{}{
						"apiVersion": s.Group + "/v1",
						"kind":       s.Kind,
					}
					if tc.meta != nil {
						obj["metadata"] = tc.meta
					}
					if tc.status != nil {
						obj["status"] = tc.status
					}
					u := &unstructured.Unstructured{Object: obj}
					hs, err := evaluate(t, vm, u)
					if err != nil {
						t.Fatalf("script error: %v", err)
					}
					switch hs.Status {
					case health.HealthStatusHealthy, health.HealthStatusProgressing, health.HealthStatusDegraded, health.HealthStatusSuspended:
					case health.HealthStatusMissing, health.HealthStatusUnknown:
						if s.Kind != "Application" {
							t.Fatalf("unexpected status %q %q", hs.Status, hs.Message)
						}
					default:
						t.Fatalf("invalid status %q %q", hs.Status, hs.Message)
					}
					if strings.HasPrefix(hs.Message, "spokeforge health script failed") {
						t.Fatalf("a guard is missing; pcall caught: %s", hs.Message)
					}
					if len(hs.Message) > 8192 {
						t.Fatalf("message not truncated: %d bytes", len(hs.Message))
					}
				})
			}
		}
	}
}

// BenchmarkHealth measures one evaluation per fixture as Argo CD v3.6.2 runs
// it (a new VM, the object converted into Lua tables, the script run: v3.6.2
// compiles a script text once and keeps it in a process-wide cache, where
// v2.14 and v3.4 compiled it on every evaluation), for our scripts in the
// default sandbox and, on the same objects, for Argo CD's built-in Certificate
// and ExternalSecret scripts (which Argo CD runs with open libs).
func BenchmarkHealth(b *testing.B) {
	scripts := loadScripts(b)
	ours := argolua.VM{ResourceOverrides: overrides(scripts)}
	builtin := argolua.VM{UseOpenLibs: true}
	cases := []struct{ name, fixture string }{
		{"spokeforge.io/Onboarding/healthy", "spokeforge.io/Onboarding/testdata/healthy_ready_message.yaml"},
		{"spokeforge.io/Onboarding/degraded_queues", "spokeforge.io/Onboarding/testdata/degraded_queues.yaml"},
		{"spokeforge.io/Onboarding/pending_reason", "spokeforge.io/Onboarding/testdata/progressing_pending_reason.yaml"},
		{"cert-manager.io/Certificate/healthy", "cert-manager.io/Certificate/testdata/healthy_issued.yaml"},
		{"cert-manager.io/Certificate/stale_backoff", "cert-manager.io/Certificate/testdata/degraded_stale_backoff.yaml"},
		{"external-secrets.io/ExternalSecret/healthy", "external-secrets.io/ExternalSecret/testdata/healthy.yaml"},
		{"external-secrets.io/ExternalSecret/eventual_consistency", "external-secrets.io/ExternalSecret/testdata/progressing_eventual_consistency_in_grace.yaml"},
		{"argoproj.io/Application/healthy", "argoproj.io/Application/testdata/degraded.yaml"},
	}
	for _, c := range cases {
		obj := loadObj(b, c.fixture)
		b.Run("spokeforge/"+c.name, func(b *testing.B) {
			script, _, err := ours.GetHealthScript(obj)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := ours.ExecuteHealthLua(obj, script); err != nil {
					b.Fatal(err)
				}
			}
		})
		kind := obj.GroupVersionKind().Group
		if kind != "cert-manager.io" && kind != "external-secrets.io" {
			continue
		}
		b.Run("builtin/"+c.name, func(b *testing.B) {
			script, _, err := builtin.GetHealthScript(obj)
			if err != nil || script == "" {
				b.Fatalf("built-in script: %q %v", script, err)
			}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := builtin.ExecuteHealthLua(obj, script); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
