//go:build !cmponly

package main

import (
	"strings"
	"testing"

	"github.com/spokeforge/spokeforge/internal/awsfake"
)

// The example repo's files are encrypted to a recipient whose private key
// was discarded: a sync decrypts none of them, names why for each, writes
// nothing and exits 3 (none synchronised).
func TestSecretsSyncCommand(t *testing.T) {
	f := awsfake.New("111122223333", "us-east-1")
	url, err := f.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.StaticKey("AKIACLI", "arn:aws:iam::111122223333:role/sync")
	for k, v := range map[string]string{"AWS_ENDPOINT_URL": url, "AWS_ACCESS_KEY_ID": "AKIACLI", "AWS_SECRET_ACCESS_KEY": "s",
		"AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null", "AWS_EC2_METADATA_DISABLED": "true",
		"SOPS_AGE_KEY": "", "SOPS_AGE_KEY_FILE": t.TempDir() + "/none.txt", "XDG_CONFIG_HOME": t.TempDir()} {
		t.Setenv(k, v)
	}
	code, out, stderr := run("secrets", "sync", "examples/gitops", "--cluster", "gpu-east-1")
	if code != 3 || !strings.Contains(out, "0 of 2 synchronised, 2 failed") || stderr != "" {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	if f.Calls("secretsmanager.CreateSecret")+f.Calls("secretsmanager.PutSecretValue") != 0 {
		t.Fatal("a sync that decrypted nothing wrote")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"secrets", "sync", "examples/gitops", "-o", "xml"}, `-o "xml": want table or json`},
		{[]string{"secrets", "sync", "examples/gitops", "--cluster", "../x"}, "--cluster: not a cluster name"},
		{[]string{"secrets", "sync", "examples/gitops", "--cluster", "nowhere"}, "clusters/nowhere/cluster.yaml: file not found"},
	} {
		if code, _, stderr := run(tc.args...); code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %q", tc.args, code, stderr)
		}
	}
}
