package repo

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spokeforge/spokeforge/internal/record"
)

// TestCredentialsScrubbedWithoutTheDecoderCheck is the second layer of
// "no value under connection.credentials is repeated": with the decoder's
// own redaction switched off (secretField), every finding of ParseCluster,
// LoadCluster and LoadFS still leaves out the canary, in every shape.
func TestCredentialsScrubbedWithoutTheDecoderCheck(t *testing.T) {
	const canary = "CANARYscrub5k"
	forms := []string{
		"type: bearerToken\n  token: [%s]",
		"type: bearerToken\n  token: {a: %s}",
		"type: bearerToken\n  token: {%s: a}",
		"type: bearerToken\n  token: 9%s",
		"type: bearerToken\n  token: |\n    line one\n    %s\n    line three",
		"type: bearerToken\n  token: \"%s\\u0001\"",
		"type: bearerToken\n  token: \"a long line first, then the canary after forty characters %s\"",
		"type: bearerToken\n  token: !%s x",
		"type: bearerToken\n  token: &%s [x]",
		"type: bearerToken\n  exec: %s",
		"type: bearerToken\n  exec: {%[1]s: x, %[1]s: y}",
		"type: bearerToken\n  exec: {%s: \"x\\u0001\"}",
		"type: bearerToken\n  exec: {a: !!int %s}",
		"type: bearerToken\n  %s: x",
		"type: bearerToken\n  %[1]s: x\n  %[1]s: y",
		"type: bearerToken\n  password: {%[1]s: [%[1]s]}",
		"type: bearerToken\n  secretName: \"%s!\"",
		"type: %s",
	}
	secretField = func(string) bool { return false }
	t.Cleanup(func() { secretField = SecretField })
	base := exampleFiles(t)
	const block = "    credentials:\n      type: bearerToken\n"
	for _, form := range forms {
		text := fmt.Sprintf(form, canary)
		rec := strings.Replace(string(base["clusters/gpu-east-1/cluster.yaml"]), block, "    credentials:\n      "+strings.ReplaceAll(text, "\n", "\n    ")+"\n", 1)
		files := map[string][]byte{}
		for k, v := range base {
			files[k] = v
		}
		files["clusters/gpu-east-1/cluster.yaml"] = []byte(rec)
		dir := filepath.Join(t.TempDir(), "gpu-east-1")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ClusterFile), []byte(rec), 0o644); err != nil {
			t.Fatal(err)
		}
		_, perrs := ParseCluster("clusters/gpu-east-1/cluster.yaml", []byte(rec))
		_, lerrs := LoadCluster(dir, "clusters/gpu-east-1")
		_, ferrs := LoadFS(NewMemFS(files))
		for name, errs := range map[string]record.Errors{"ParseCluster": perrs, "LoadCluster": lerrs, "LoadFS": ferrs} {
			if !strings.Contains(errs.Error(), "spec.connection.credentials") {
				t.Errorf("%q: %s found nothing under credentials: %v", text, name, errs)
			}
			if strings.Contains(errs.Error(), canary) {
				t.Errorf("%q: %s repeats the canary: %s", text, name, errs)
			}
		}
	}
}
