package repo

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

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

// credentialPositions put a value (YAML double-quoted) at each place under
// connection.credentials where a record may hold text: a field of each
// type, a list item, a mapping key and value, an unknown field's name and
// value, exec's keys and values.
var credentialPositions = []string{
	"type: %s", "type: bearerToken\n  token: %s", "type: bearerToken\n  token: [%s]", "type: bearerToken\n  token: {%s: %[1]s}",
	"type: bearerToken\n  secretName: %s", "type: bearerToken\n  tokenFile: %s", "type: clientCertificate\n  clientKeyData: %s",
	"type: bearerToken\n  exec: {%s: [%[1]s]}", "type: bearerToken\n  authProvider: {name: %s}", "type: bearerToken\n  %s: %[1]s",
	"type: bearerToken\n  %s: 1\n  %[1]s: 2", "type: bearerToken\n  exec: {%s: 1, %[1]s: 2}",
}

// FuzzCredentialNeverRepeated puts arbitrary text at every position under
// credentials: no finding of the record repeats it in its path or message.
func FuzzCredentialNeverRepeated(f *testing.F) {
	for _, s := range []string{"CANARYfuzz01", "hunter2hunter2", "a\nmulti-line\nsecret", "\"quoted\" and 'single'", "line\u2028sep", "bearerTokenX", "9182736455"} {
		f.Add(s)
	}
	base, err := ReadFiles("../../examples/gitops")
	if len(err) > 0 {
		f.Fatal(err)
	}
	record := string(base["clusters/gpu-east-1/cluster.yaml"])
	const block = "    credentials:\n      type: bearerToken\n"
	f.Fuzz(func(t *testing.T, secret string) {
		if len(secret) < minScrubbed || credentialWords[secret] || !utf8.ValidString(secret) {
			return // too short to tell from the messages' own words, or a word the schema spells
		}
		quoted, _ := json.Marshal(secret) // a YAML double-quoted scalar
		for _, pos := range credentialPositions {
			text := strings.ReplaceAll(pos, "%[1]s", "%s")
			text = strings.ReplaceAll(text, "%s", string(quoted))
			rec := strings.Replace(record, block, "    credentials:\n      "+strings.ReplaceAll(text, "\n", "\n    ")+"\n", 1)
			_, errs := ParseCluster("clusters/gpu-east-1/cluster.yaml", []byte(rec))
			for _, e := range errs {
				if strings.Contains(e.Path, secret) || strings.Contains(e.Msg, secret) {
					t.Fatalf("%q at %q is repeated: %s", secret, pos, e.Error())
				}
			}
		}
	})
}
