package generator

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const testToken = "0123456789abcdef-test-token"

type fixture struct {
	srv  *Server
	url  string
	logs *bytes.Buffer
	src  *staticSource
	hub  *fakeHub
}

func newFixture(t *testing.T, src *staticSource, hub *fakeHub) *fixture {
	t.Helper()
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &bytes.Buffer{}
	var h Hub
	if hub != nil {
		h = hub
	}
	srv, err := NewServer(Config{TokenFile: tok, MaxBodyBytes: 4096, Log: slog.New(slog.NewJSONHandler(logs, nil))}, src, h)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return &fixture{srv: srv, url: ts.URL, logs: logs, src: src, hub: hub}
}

func (f *fixture) do(t *testing.T, method, path, body string, hdr map[string]string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, f.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

var okHeaders = map[string]string{"Authorization": "Bearer " + testToken, "Content-Type": "application/json"}

func with(h map[string]string, k, v string) map[string]string {
	out := map[string]string{}
	for a, b := range h {
		out[a] = b
	}
	if v == "" {
		delete(out, k)
	} else {
		out[k] = v
	}
	return out
}

func TestGetParamsErrors(t *testing.T) {
	f := newFixture(t, &staticSource{snap: mustSnapshot(t, exampleFS(t, nil), "c1")}, registeredHub())
	zones := `{"applicationSetName":"z","input":{"parameters":{"kind":"zones"}}}`
	tests := []struct {
		name, method, body string
		hdr                map[string]string
		status             int
		msg                string
	}{
		{"missing token", "POST", zones, with(okHeaders, "Authorization", ""), 401, "missing Authorization"},
		{"not bearer", "POST", zones, with(okHeaders, "Authorization", "Basic "+testToken), 401, "not a bearer token"},
		{"wrong token", "POST", zones, with(okHeaders, "Authorization", "Bearer wrong-token-wrong-token"), 403, "wrong token"},
		{"token prefix", "POST", zones, with(okHeaders, "Authorization", "Bearer "+testToken[:10]), 403, "wrong token"},
		{"no content type", "POST", zones, with(okHeaders, "Content-Type", ""), 415, "want application/json"},
		{"wrong content type", "POST", zones, with(okHeaders, "Content-Type", "text/plain"), 415, "want application/json"},
		{"oversized", "POST", `{"input":{"parameters":{"kind":"zones","org":"` + strings.Repeat("a", 5000) + `"}}}`, okHeaders, 413, "limit"},
		{"malformed", "POST", `{"input":{`, okHeaders, 400, "malformed JSON"},
		{"not an object", "POST", `[1,2]`, okHeaders, 400, "not a JSON object"},
		{"unknown kind", "POST", `{"input":{"parameters":{"kind":"nodes"}}}`, okHeaders, 400, "unknown"},
		{"GET", "GET", "", okHeaders, 405, "Method Not Allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := f.do(t, tt.method, "/api/v1/getparams.execute", tt.body, tt.hdr)
			var e struct{ Error string }
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("body %q is not a JSON error: %v", body, err)
			}
			if code != tt.status || !strings.Contains(e.Error, tt.msg) {
				t.Fatalf("got %d %q, want %d containing %q", code, e.Error, tt.status, tt.msg)
			}
		})
	}
	if strings.Contains(f.logs.String(), testToken) || strings.Contains(f.logs.String(), testToken[:10]) {
		t.Fatal("the token reached the log")
	}
	if !strings.Contains(f.logs.String(), `"status":403`) {
		t.Fatalf("requests are not logged: %s", f.logs)
	}
}

// TestNeverAShrunkenAnswer: whenever the generator is in trouble it answers 503, never 200.
func TestNeverAShrunkenAnswer(t *testing.T) {
	snap := mustSnapshot(t, exampleFS(t, nil), "c1")
	clusters := `{"input":{"parameters":{"kind":"clusters"}}}`
	zones := `{"input":{"parameters":{"kind":"zones"}}}`
	tests := []struct {
		name   string
		src    *staticSource
		hub    *fakeHub
		body   string
		status int
		msg    string
	}{
		{"repo never loaded: clusters", &staticSource{}, registeredHub(), clusters, 503, "never loaded"},
		{"repo never loaded: zones", &staticSource{}, registeredHub(), zones, 503, "never loaded"},
		{"repo unreachable too long", &staticSource{snap: snap, err: errors.New("repo unreachable: no successful fetch for 20m")}, registeredHub(), zones, 503, "repo unreachable"},
		{"informers not synced", &staticSource{snap: snap}, &fakeHub{err: errors.New("hub informers not synced yet")}, zones, 503, "not synced"},
		{"API server down", &staticSource{snap: snap}, &fakeHub{err: errors.New("hub API server: connection refused")}, zones, 503, "connection refused"},
		{"no hub at all", &staticSource{snap: snap}, nil, zones, 503, "without one"},
		{"API server down does not touch clusters", &staticSource{snap: snap}, &fakeHub{err: errors.New("down")}, clusters, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.src, tt.hub)
			code, body := f.do(t, "POST", "/api/v1/getparams.execute", tt.body, okHeaders)
			if code != tt.status || !strings.Contains(string(body), tt.msg) {
				t.Fatalf("got %d %s, want %d containing %q", code, body, tt.status, tt.msg)
			}
		})
	}
}

func TestGolden(t *testing.T) {
	f := newFixture(t, &staticSource{snap: mustSnapshot(t, exampleFS(t, nil), "c1")}, registeredHub())
	for _, kind := range []string{KindClusters, KindZones} {
		code, body := f.do(t, "POST", "/api/v1/getparams.execute", `{"input":{"parameters":{"kind":"`+kind+`"}}}`, okHeaders)
		if code != 200 {
			t.Fatalf("%s: %d %s", kind, code, body)
		}
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, body, "", "  "); err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join("testdata", kind+".json")
		if *update {
			if err := os.WriteFile(golden, pretty.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run go test ./generator -update)", err)
		}
		if !bytes.Equal(pretty.Bytes(), want) {
			t.Fatalf("%s answer differs from %s (go test ./generator -update):\n%s", kind, golden, pretty.String())
		}
	}
}

func TestProbesPlacementsMetrics(t *testing.T) {
	src := &staticSource{}
	hub := registeredHub()
	delete(hub.secrets, "gpu-west-2")
	f := newFixture(t, src, hub)
	if code, _ := f.do(t, "GET", "/healthz", "", nil); code != 200 {
		t.Fatalf("healthz %d", code)
	}
	if code, body := f.do(t, "GET", "/readyz", "", nil); code != 503 || !strings.Contains(string(body), "never loaded") {
		t.Fatalf("readyz before the first snapshot: %d %s", code, body)
	}
	src.snap = mustSnapshot(t, exampleFS(t, nil), "c1")
	if code, _ := f.do(t, "GET", "/readyz", "", nil); code != 200 {
		t.Fatalf("readyz with a snapshot: %d", code)
	}
	if code, _ := f.do(t, "GET", "/api/v1/placements", "", nil); code != 401 {
		t.Fatalf("placements without a token: %d", code)
	}
	code, body := f.do(t, "GET", "/api/v1/placements", "", okHeaders)
	if code != 200 {
		t.Fatalf("placements %d %s", code, body)
	}
	var p Placements
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	got := map[string]Outcome{}
	for _, d := range p.Zones {
		got[d.Zone] = d.Outcome
		if d.Reason == "" {
			t.Errorf("%s has no reason", d.Zone)
		}
	}
	want := map[string]Outcome{"checkout-prod": Placed, "checkout-rc": Placed, "checkout-west": Rejected, "trainer-staging": Waiting}
	for z, o := range want {
		if got[z] != o {
			t.Errorf("placements %s = %s, want %s", z, got[z], o)
		}
	}
	if p.Counts[Placed] != 2 || p.Counts[Waiting] != 1 || p.Counts[Rejected] != 1 || p.Repo.Commit != "c1" || p.Clusters != 3 {
		t.Errorf("placements summary %+v", p)
	}
	if code, body := f.do(t, "GET", "/api/v1/placements?org=globex", "", okHeaders); code != 200 || strings.Contains(string(body), "checkout") {
		t.Errorf("filtered placements: %d %s", code, body)
	}
	_, metrics := f.do(t, "GET", "/metrics", "", nil)
	for _, w := range []string{
		`spokeforge_generator_zone_decisions{outcome="placed"} 2`,
		`spokeforge_generator_zone_decisions{outcome="waiting"} 1`,
		`spokeforge_generator_zone_decisions{outcome="rejected"} 1`,
		`spokeforge_generator_requests_total{code="200",kind="",route="/api/v1/placements"}`,
		`spokeforge_generator_request_duration_seconds_bucket`,
		`spokeforge_generator_snapshot_age_seconds`,
		`spokeforge_generator_hub_ready 1`,
	} {
		if !strings.Contains(string(metrics), w) {
			t.Errorf("metrics lack %s", w)
		}
	}
	if !strings.Contains(f.logs.String(), `"msg":"zone decision","zone":"trainer-staging"`) {
		t.Errorf("decisions are not logged: %s", f.logs)
	}
}

func TestRefreshAuth(t *testing.T) {
	f := newFixture(t, &staticSource{snap: mustSnapshot(t, exampleFS(t, nil), "c1")}, registeredHub())
	body := `{"ref":"refs/heads/main"}`
	mac := hmac.New(sha256.New, []byte(testToken))
	mac.Write([]byte(body))
	sig := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	tests := []struct {
		name   string
		hdr    map[string]string
		status int
	}{
		{"bearer", map[string]string{"Authorization": "Bearer " + testToken}, 200},
		{"gitlab", map[string]string{"X-Gitlab-Token": testToken}, 200},
		{"github", map[string]string{"X-Hub-Signature-256": sig}, 200},
		{"github wrong signature", map[string]string{"X-Hub-Signature-256": "sha256=" + strings.Repeat("0", 64)}, 403},
		{"gitlab wrong", map[string]string{"X-Gitlab-Token": "nope"}, 403},
		{"nothing", nil, 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if code, b := f.do(t, "POST", "/api/v1/refresh", body, tt.hdr); code != tt.status {
				t.Fatalf("got %d %s, want %d", code, b, tt.status)
			}
		})
	}
}

func TestTokenFileRules(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short")
	_ = os.WriteFile(short, []byte("abc\n"), 0o600)
	for _, p := range []string{filepath.Join(dir, "missing"), short} {
		if _, err := NewServer(Config{TokenFile: p}, &staticSource{}, nil); err == nil {
			t.Errorf("token file %s accepted", filepath.Base(p))
		}
	}
}
