package lua

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	argolua "github.com/argoproj/argo-cd/v3/util/lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	sflua "github.com/spokeforge/spokeforge/lua"
)

// TestFastPathAgreesWithSource evaluates each check that has a fast.lua, as
// shipped (fast path, then the whole check) and as its readable source, on
// thousands of objects built around the states the fast paths answer for and
// their edges (one field of another type, a message of 4 KiB and one byte
// more, a duplicate or unknown condition, timestamps near the grace period and
// in every form health.lua parses), with the controller in several zones: the
// two must give the same health.
func TestFastPathAgreesWithSource(t *testing.T) {
	scripts := loadScripts(t)
	shipped := argolua.VM{ResourceOverrides: overridesOf(scripts, true)}
	source := argolua.VM{ResourceOverrides: overridesOf(scripts, false)}
	r := rand.New(rand.NewSource(16))
	n := 0
	for _, s := range scripts {
		if s.Fast == "" {
			continue
		}
		n++
		fast, err := sflua.Minify(s.Fast)
		if err != nil {
			t.Fatal(err)
		}
		// The fast path alone, to count the objects it answers for.
		fast += "\nreturn { status = \"Unknown\", message = \"fell through\" }\n"
		answered, byFast, lazy := map[string]int{}, 0, 0
		const objects = 600
		for i := 0; i < objects; i++ {
			obj := nearFastPath(r, s.Kind)
			u := &unstructured.Unstructured{Object: obj}
			if hs, err := (argolua.VM{}).ExecuteHealthLua(u, fast); err != nil {
				t.Fatalf("%s/fast.lua: %v\n%v", s.Dir, err, obj)
			} else if hs.Message != "fell through" {
				byFast++
				if strings.HasPrefix(hs.Message, "Issuance failed") {
					lazy++
				}
			}
			// The controller's zone matters only where a check reads the time.
			zones := controllerZones[:1]
			if s.Kind == "ExternalSecret" || s.Kind == "Certificate" {
				zones = controllerZones
			}
			for _, zone := range zones {
				want, err := inZone(zone, func() (string, error) { return evalString(t, source, u) })
				if err != nil {
					t.Fatalf("%s source: %v", s.Dir, err)
				}
				got, err := inZone(zone, func() (string, error) { return evalString(t, shipped, u) })
				if err != nil {
					t.Fatalf("%s shipped: %v\n%v", s.Dir, err, obj)
				}
				if got != want {
					t.Fatalf("%s, controller in %s: shipped gives %s, source %s, for\n%v", s.Dir, zone, got, want, obj)
				}
				answered[strings.SplitN(want, " ", 2)[0]]++
			}
		}
		t.Logf("%s: %d objects, %d answered by the fast path (%d by its lazy part, a failed issuance in backoff); health (per zone): %v", s.Dir, objects, byFast, lazy, answered)
	}
	if n == 0 {
		t.Fatal("no check has a fast.lua")
	}
}

func evalString(t *testing.T, vm argolua.VM, u *unstructured.Unstructured) (string, error) {
	hs, err := evaluate(t, vm, u)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s %q", hs.Status, hs.Message), nil
}

// missing are messages around health.lua's search for a missing provider
// secret (ASCII case-insensitive, the first KiB): each needle in several
// cases and places, near misses, a needle ending at byte 1024 and at 1025, and
// bytes outside printable ASCII before and after one.
var missing = []interface{}{
	"could not get secret data from provider: ResourceNotFoundException: Secrets Manager can't find the specified secret.",
	"SECRET NOT FOUND", "Not Found", "not foun", "nnot found", "DoEs NoT ExIsT", "does not exis", "does  not exist",
	"can't find the specified secret", "Can't Find The Specified Secret", "can’t find the specified secret",
	"resourcenotfoundexceptio", "ResourceNotFoundExceptionX", "does not\nexist", "héllo: not found", "not found: héllo",
	"\x00not found", "tab\tnot found", "~{|}not found`[\\]^_@", "\"quoted\" not found",
	strings.Repeat("x", 1015) + "not found", strings.Repeat("x", 1016) + "not found",
	"not found" + strings.Repeat("\x7f", 10),
}

// nearFastPath returns an object of the kind in a state a fast path answers
// for, then changed in a few random ways.
func nearFastPath(r *rand.Rand, kind string) map[string]interface{} {
	pick := func(vs ...interface{}) interface{} { return vs[r.Intn(len(vs))] }
	msg := func() interface{} {
		return pick(nil, "", "ok", "Certificate is up to date and has not expired", strings.Repeat("m", 4096),
			strings.Repeat("m", 4097), 3.0, false, []interface{}{"a"}, "could not get secret: ResourceNotFoundException",
			"Secret does not exist", "AccessDenied", missing[r.Intn(len(missing))])
	}
	var types []string
	switch kind {
	case "Onboarding":
		types = []string{"Identity", "Secrets", "Certificates", "Registry", "Queues", "Storage", "Workload", "Ready"}
	case "Certificate":
		types = []string{"Ready", "Issuing"}
	default:
		types = []string{"Ready"}
	}
	var conds []interface{}
	for _, ty := range types {
		st := "True"
		if ty == "Issuing" {
			st = "False"
		}
		conds = append(conds, map[string]interface{}{"type": ty, "status": st, "message": msg()})
	}
	if r.Intn(3) == 0 { // one condition False (Issuing=False becomes True)
		c := conds[r.Intn(len(conds))].(map[string]interface{})
		c["status"] = map[bool]string{true: "False", false: "True"}[c["status"] == "True"]
	}
	r.Shuffle(len(conds), func(i, j int) { conds[i], conds[j] = conds[j], conds[i] })
	status := map[string]interface{}{"conditions": conds}
	meta := map[string]interface{}{"name": "c", "namespace": "ns"}
	now := time.Now().UTC()
	stamp := func() interface{} {
		ago := []time.Duration{30 * time.Second, 570 * time.Second, 630 * time.Second, time.Hour,
			5*24*time.Hour - 15*time.Hour, 5*24*time.Hour + 15*time.Hour, 30 * 24 * time.Hour}[r.Intn(7)]
		t := now.Add(-ago)
		switch r.Intn(8) {
		case 0:
			return t.Format("2006-01-02 15:04:05Z")
		case 1:
			return t.Format("2006-01-02t15:04:05z")
		case 2:
			return t.In(time.FixedZone("", -11*3600)).Format(time.RFC3339)
		case 3:
			return t.Format("2006-01-02T15:04:05.000Z")
		case 4:
			return pick(nil, "", "bad", 12.0, "2026-02-31T00:00:00Z", "2026-13-01T00:00:00Z", "0999-01-01T00:00:00Z", "2026-01-01T00:00:60Z")
		default:
			return t.Format(time.RFC3339)
		}
	}
	if kind == "Certificate" && r.Intn(2) == 0 { // a failed issuance, maybe in backoff
		for _, c := range conds {
			if c := c.(map[string]interface{}); c["type"] == "Ready" {
				c["status"] = "False"
			}
		}
		status["failedIssuanceAttempts"] = pick(1.0, 2.0, 5.0, 6.0, 40.0, 2.5, 0.0, "3", nil)
		status["lastFailureTime"] = now.Add(-time.Duration(r.Intn(100000)) * time.Second).Format(time.RFC3339)
		if r.Intn(2) == 0 {
			status["lastFailureTime"] = stamp()
		}
		meta["name"] = pick("c", "", nil, 7.0, strings.Repeat("n", 4097))
		meta["namespace"] = pick("ns", "", nil, strings.Repeat("n", 4096), strings.Repeat("n", 4097), 3.0)
	}
	if kind == "ExternalSecret" {
		meta["creationTimestamp"] = stamp()
		c := conds[0].(map[string]interface{})
		c["reason"] = pick("SecretSyncedError", "SecretSyncedError", "Other", nil)
		if r.Intn(2) == 0 { // a recent failed sync: the grace period and the message search
			c["status"], c["reason"] = "False", "SecretSyncedError"
			c["message"] = pick(missing[r.Intn(len(missing))], msg())
			// 30 s from the end of the grace period either way: an evaluation takes time.
			ago := []time.Duration{0, 30 * time.Second, 570 * time.Second, 630 * time.Second, time.Hour}[r.Intn(5)]
			meta["creationTimestamp"] = now.Add(-ago).Format(time.RFC3339)
		}
	}
	for k := r.Intn(4); k > 0; k-- {
		switch r.Intn(12) {
		case 0: // a condition changes status
			if c := someCondition(r, conds); c != nil {
				c["status"] = pick("True", "False", "Unknown", nil, 1.0)
			}
		case 1: // one is dropped
			if len(conds) > 0 {
				i := r.Intn(len(conds))
				conds = append(conds[:i], conds[i+1:]...)
			}
		case 2: // a duplicate or an unknown type, anywhere
			c := map[string]interface{}{"type": pick(types[r.Intn(len(types))], "Other", 5.0, nil), "status": pick("True", "False", "Unknown"), "message": msg()}
			i := r.Intn(len(conds) + 1)
			conds = append(conds[:i], append([]interface{}{c}, conds[i:]...)...)
		case 3: // an entry that is not a condition
			i := r.Intn(len(conds) + 1)
			conds = append(conds[:i], append([]interface{}{pick("Ready", 1.0, true, []interface{}{})}, conds[i:]...)...)
		case 4: // a reason
			if c := someCondition(r, conds); c != nil {
				c["reason"] = pick("SecretSyncedError", "PendingApproval", "Failed", nil, 3.0)
			}
		case 5:
			status["failedIssuanceAttempts"] = pick(nil, 0.0, 1.0, 3.0, "2", "x", 1e16, false)
		case 6:
			status["lastFailureTime"] = pick(nil, "", now.Add(-time.Hour).Format(time.RFC3339), "bad", 3.0)
		case 7:
			if meta != nil {
				meta["generation"] = pick(nil, 1.0, 2.0, "2")
			}
			status["observedGeneration"] = pick(nil, 1.0, 2.0, "1")
		case 8:
			if c := someCondition(r, conds); c != nil {
				c["severity"] = pick("Warning", "Error", nil)
			}
		case 9: // conditions as a map, or not a list at all
			m := map[string]interface{}{}
			for _, c := range conds {
				if c, ok := c.(map[string]interface{}); ok {
					if ty, ok := c["type"].(string); ok {
						m[ty] = c
					}
				}
			}
			status["conditions"] = pick(m, "Ready", nil, map[string]interface{}{})
			conds = nil
		case 10:
			meta = nil
		case 11:
			if kind == "ExternalSecret" && meta != nil {
				meta["creationTimestamp"] = stamp()
			}
		}
		if conds != nil {
			status["conditions"] = conds
		}
	}
	obj := map[string]interface{}{"kind": kind, "status": status}
	switch kind {
	case "Onboarding":
		obj["apiVersion"] = "spokeforge.io/v1alpha1"
	case "Certificate":
		obj["apiVersion"] = "cert-manager.io/v1"
	default:
		obj["apiVersion"] = "external-secrets.io/v1beta1"
	}
	if meta != nil {
		obj["metadata"] = meta
	}
	return obj
}

// someCondition returns one of the condition maps in conds, or nil.
func someCondition(r *rand.Rand, conds []interface{}) map[string]interface{} {
	if len(conds) == 0 {
		return nil
	}
	c, _ := conds[r.Intn(len(conds))].(map[string]interface{})
	return c
}
