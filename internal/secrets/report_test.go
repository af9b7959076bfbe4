package secrets

import (
	"bytes"
	"strings"
	"testing"
)

func TestReport(t *testing.T) {
	item := func(s Status) Item { return Item{Cluster: "c", Secret: "p/" + string(s), Status: s} }
	for _, tc := range []struct {
		name    string
		dry     bool
		items   []Item
		summary string
		code    int
	}{
		{"all synchronised", false, []Item{item(Created), item(Updated), item(Unchanged)},
			"3 of 3 synchronised (1 created, 1 updated, 1 unchanged)", ExitSynchronised},
		{"partial", false, []Item{item(Created), item(Updated), item(Unchanged), item(Failed), item(Failed), item(Orphaned)},
			"3 of 5 synchronised (1 created, 1 updated, 1 unchanged), 2 failed, 1 orphaned", ExitPartial},
		{"nothing", false, []Item{item(Failed), item(Failed)}, "0 of 2 synchronised, 2 failed", ExitNone},
		{"no secrets", false, nil, "0 of 0 synchronised", ExitSynchronised},
		{"orphans alone are no failure", false, []Item{item(Unchanged), item(Orphaned)}, "1 of 1 synchronised (1 unchanged), 1 orphaned", ExitSynchronised},
		{"dry run", true, []Item{item(WouldCreate), item(WouldUpdate), item(Unchanged), item(Failed)},
			"3 of 4 in sync or ready to write (dry run: nothing written) (1 unchanged, 1 would create, 1 would update), 1 failed", ExitPartial},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Report{DryRun: tc.dry, Items: tc.items}
			r.summarise()
			if r.Summary != tc.summary || r.ExitCode() != tc.code {
				t.Fatalf("summary %q exit %d; want %q %d", r.Summary, r.ExitCode(), tc.summary, tc.code)
			}
		})
	}
}

func TestReportTable(t *testing.T) {
	r := &Report{Items: []Item{
		{Cluster: "c1", Secret: "a/c1/api", Status: Updated, Keys: []string{"~token", "+user"}, Tags: true, Retries: 2},
		{Cluster: "c1", Secret: "a/c1/hf", Status: Failed, Reason: "clusters/c1/secrets/hf.sops.yaml: integrity check failed"},
	}, Warnings: []string{"orphans in us-east-1 not checked: AccessDeniedException: no"}}
	r.summarise()
	var b bytes.Buffer
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	want := `CLUSTER  SECRET    STATUS   KEYS          DETAIL
c1       a/c1/api  updated  ~token,+user  tags set; 2 retries
c1       a/c1/hf   failed   -             clusters/c1/secrets/hf.sops.yaml: integrity check failed
warning: orphans in us-east-1 not checked: AccessDeniedException: no
1 of 2 synchronised (1 updated), 1 failed
`
	if b.String() != want {
		t.Fatalf("table:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := r.WriteJSON(&b); err != nil || !strings.Contains(b.String(), `"keys": [`) || !strings.Contains(b.String(), `"summary": "1 of 2 synchronised (1 updated), 1 failed"`) {
		t.Fatalf("json %v:\n%s", err, b.String())
	}
}

func TestDiffKeys(t *testing.T) {
	want := map[string]string{"token": "t2", "user": "u"}
	for _, tc := range []struct {
		current string
		binary  bool
		diff    string
	}{
		{`{"token":"t2","user":"u"}`, false, ""},
		{`{ "user": "u", "token": "t2" }`, false, ""},
		{`{"token":"t1","user":"u"}`, false, "~token"},
		{`{"token":"t2"}`, false, "+user"},
		{`{"token":"t2","user":"u","old":"x"}`, false, "-old"},
		{`{"token":2,"user":"u"}`, false, "~token"},
		{`plain text`, false, "(whole value)"},
		{``, true, "(whole value)"},
	} {
		if got := strings.Join(diffKeys(tc.current, tc.binary, want), ","); got != tc.diff {
			t.Errorf("diffKeys(%s) = %q, want %q", tc.current, got, tc.diff)
		}
	}
}
