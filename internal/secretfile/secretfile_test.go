package secretfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/spokeforge/spokeforge/internal/api/v1alpha1"
	"github.com/spokeforge/spokeforge/internal/record"
	"github.com/spokeforge/spokeforge/internal/validate"
)

// enc is a value in SOPS's encrypted form (structure only: this package
// never decrypts).
const enc = "ENC[AES256_GCM,data:3q2+7w==,iv:AAAAAAAAAAAAAAAAAAAAAA==,tag:BBBBBBBBBBBBBBBBBBBBBB==,type:str]"

// bound is the binding line every valid file has (its value encrypted).
const bound = BindingKey + ": " + enc + "\n"

const recipient = "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p"

func sopsFile(body string) string {
	return body + `sops:
    age:
        - recipient: ` + recipient + `
          enc: |
            -----BEGIN AGE ENCRYPTED FILE-----
            YWdlLWVuY3J5cHRpb24ub3JnL3YxCi0+IFgyNTUxOSBmYWtl
            -----END AGE ENCRYPTED FILE-----
    lastmodified: "2026-12-01T10:00:00Z"
    mac: ` + enc + `
    unencrypted_suffix: _unencrypted
    version: 3.10.2
`
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		keys       []string
		want       string // a substring of the findings; "" for none
	}{
		{"two keys", sopsFile(bound + "token: " + enc + "\nuser: " + enc + "\n"), []string{"token", "user"}, ""},
		{"encrypted comment", sopsFile("#ENC[AES256_GCM,data:AAAA,iv:AAAA,tag:AAAA,type:comment]\n" + bound + "token: " + enc + "\n"), []string{"token"}, ""},
		{"no binding", sopsFile("token: " + enc + "\n"), nil, "has no spokeforge.io/bound-to key"},
		{"plaintext binding not repeated", sopsFile(BindingKey + ": hunter2-do-not-print\ntoken: " + enc + "\n"), nil, "spokeforge.io/bound-to: must be a single encrypted value"},
		{"binding as a mapping", sopsFile(BindingKey + ":\n  a: " + enc + "\ntoken: " + enc + "\n"), nil, "spokeforge.io/bound-to: must be a single encrypted value"},
		{"binding alone", sopsFile(bound), nil, "holds no keys"},
		{"kms recipient", bound + "token: " + enc + "\nsops:\n  kms:\n    - arn: arn:aws:kms:us-east-1:111122223333:key/0c5d6a3e-1f2b-4c8d-9e0f-1a2b3c4d5e6f\n      enc: AQIC\n      created_at: \"2026-12-01T10:00:00Z\"\n      aws_profile: \"\"\n  lastmodified: \"2026-12-01T10:00:00Z\"\n  mac: " + enc + "\n", []string{"token"}, ""},
		{"plaintext value", sopsFile("token: hunter2-do-not-print\n"), nil, `token: is not encrypted (value not repeated)`},
		{"plaintext suffix is still plaintext", sopsFile("token_unencrypted: hunter2-do-not-print\n"), nil, "is not encrypted"},
		{"no metadata", "token: hunter2-do-not-print\n", nil, "it has no sops metadata"},
		{"plaintext comment", sopsFile("# password is hunter2-do-not-print\ntoken: " + enc + "\n"), nil, "plaintext comment"},
		{"nested value", sopsFile("token:\n  inner: " + enc + "\n"), nil, "not a list or mapping"},
		{"bad key", sopsFile("\"to ken\": " + enc + "\n"), nil, `key "to ken" is not a Secret key`},
		{"control key not repeated", sopsFile("\"to\\u202eken\": " + enc + "\n"), nil, "key at line 1 is not a Secret key"},
		{"vault refused", "token: " + enc + "\nsops:\n  hc_vault:\n    - vault_address: https://vault.invalid\n      enc: x\n  lastmodified: x\n  mac: " + enc + "\n", nil, "hc_vault recipients are not supported"},
		{"empty legacy lists", bound + "token: " + enc + "\nsops:\n  pgp: []\n  gcp_kms: []\n  age:\n    - recipient: " + recipient + "\n      enc: x\n  lastmodified: x\n  mac: " + enc + "\n", []string{"token"}, ""},
		{"aws profile refused", "token: " + enc + "\nsops:\n  kms:\n    - arn: arn:aws:kms:us-east-1:111122223333:alias/gitops\n      enc: x\n      aws_profile: prod\n  lastmodified: x\n  mac: " + enc + "\n", nil, "aws_profile: is not supported"},
		{"bad kms arn", "token: " + enc + "\nsops:\n  kms:\n    - arn: arn:aws:kms:evil.example#:111122223333:key/x\n      enc: x\n  lastmodified: x\n  mac: " + enc + "\n", nil, "is not an AWS KMS key or alias ARN"},
		{"unknown metadata", sopsFile("token: "+enc+"\n") + "    extra: 1\n", nil, `unknown SOPS metadata field "extra"`},
		{"kms role refused", "token: " + enc + "\nsops:\n  kms:\n    - arn: arn:aws:kms:us-east-1:111122223333:alias/x\n      enc: x\n      role: arn:aws:iam::999999999999:role/r\n  lastmodified: x\n  mac: " + enc + "\n", nil, "role: is not supported"},
		{"isolated partition refused", "token: " + enc + "\nsops:\n  kms:\n    - arn: arn:aws-iso:kms:us-iso-east-1:111122223333:alias/x\n      enc: x\n  lastmodified: x\n  mac: " + enc + "\n", nil, "is not an AWS KMS key or alias ARN"},
		{"isolated region refused", "token: " + enc + "\nsops:\n  kms:\n    - arn: arn:aws:kms:us-isob-east-1:111122223333:alias/x\n      enc: x\n  lastmodified: x\n  mac: " + enc + "\n", nil, "is not an AWS KMS key or alias ARN"},
		{"vault in a key group refused", "token: " + enc + "\nsops:\n  key_groups:\n    - hc_vault:\n        - vault_address: https://vault.invalid\n          enc: x\n  lastmodified: x\n  mac: " + enc + "\n", nil, "hc_vault recipients are not supported"},
		{"too many recipients", "token: " + enc + "\nsops:\n  age:\n" + strings.Repeat("    - recipient: "+recipient+"\n      enc: x\n", MaxRecipients+1) + "  lastmodified: x\n  mac: " + enc + "\n", nil, "at most 16 are accepted"},
		{"unknown anchor not repeated", sopsFile("token: *hunter2-do-not-print\n"), nil, "is not valid YAML"},
		{"no recipient", "token: " + enc + "\nsops:\n  lastmodified: x\n  mac: " + enc + "\n", nil, "names no age or AWS KMS recipient"},
		{"alias", sopsFile("a: &x " + enc + "\nb: *x\n"), nil, "aliases are not allowed"},
		{"two documents", sopsFile("token: "+enc+"\n") + "---\nx: 1\n", nil, "more than one YAML document"},
		{"empty", "", nil, "is empty"},
		{"not a mapping", "- a\n", nil, "must be a YAML mapping"},
		{"invalid YAML", "a: [\n", nil, "is not valid YAML"},
		{"only metadata", sopsFile(""), nil, "holds no keys"},
		{"duplicate key", sopsFile("token: " + enc + "\ntoken: " + enc + "\n"), nil, "duplicate key"},
		{"too large", strings.Repeat("#", MaxFileBytes+1), nil, "at most"},
		{"anchor in data", sopsFile(bound + "token: &x " + enc + "\n"), nil, "YAML anchors are not allowed"},
		{"explicit tag in data", sopsFile(bound + "token: !!str " + enc + "\n"), nil, "explicit YAML tags are not allowed"},
		{"null-tagged vault list", bound + "token: " + enc + "\nsops:\n  age:\n    - recipient: " + recipient + "\n      enc: x\n  hc_vault: !!null\n    - vault_address: https://vault.invalid\n      enc: x\n  lastmodified: x\n  mac: " + enc + "\n", nil, "explicit YAML tags are not allowed"},
		{"role through an alias", bound + "token: " + enc + "\nsops:\n  kms:\n    - arn: arn:aws:kms:us-east-1:111122223333:alias/x\n      enc: x\n      context: {a: &r arn:aws:iam::999999999999:role/hunter2}\n      role: *r\n  lastmodified: x\n  mac: " + enc + "\n", nil, "YAML aliases are not allowed"},
		{"merge key", bound + "token: " + enc + "\nsops:\n  key_groups:\n    - <<: {hc_vault: []}\n      age:\n        - recipient: " + recipient + "\n          enc: x\n  lastmodified: x\n  mac: " + enc + "\n", nil, "YAML merge keys (<<) are not allowed"},
		{"duplicate metadata field", sopsFile(bound+"token: "+enc+"\n") + "    version: 3.10.2\n", nil, "duplicate key"},
		{"role in another case", bound + "token: " + enc + "\nsops:\n  kms:\n    - arn: arn:aws:kms:us-east-1:111122223333:alias/x\n      enc: x\n      Role: arn:aws:iam::999999999999:role/hunter2\n  lastmodified: x\n  mac: " + enc + "\n", nil, `field "Role" is "role" in another case`},
		{"metadata field in another case", sopsFile(bound+"token: "+enc+"\n") + "    HC_VAULT: []\n", nil, `is "hc_vault" in another case`},
		{"lists and key groups", bound + "token: " + enc + "\nsops:\n  age:\n    - recipient: " + recipient + "\n      enc: x\n  key_groups:\n    - hc_vault:\n        - vault_address: https://vault.invalid\n  lastmodified: x\n  mac: " + enc + "\n", nil, "is not allowed beside top-level recipient lists"},
		{"key group", bound + "token: " + enc + "\nsops:\n  key_groups:\n    - age:\n        - recipient: " + recipient + "\n          enc: x\n      kms: []\n  shamir_threshold: 1\n  lastmodified: x\n  mac: " + enc + "\n", []string{"token"}, ""},
		{"empty key group", bound + "token: " + enc + "\nsops:\n  key_groups:\n    - age:\n        - recipient: " + recipient + "\n          enc: x\n    - {}\n  lastmodified: x\n  mac: " + enc + "\n", nil, "key_groups[1]: names no age or AWS KMS recipient"},
		{"unknown key group field", bound + "token: " + enc + "\nsops:\n  key_groups:\n    - age:\n        - recipient: " + recipient + "\n          enc: x\n      vault: x\n  lastmodified: x\n  mac: " + enc + "\n", nil, `unknown SOPS metadata field "vault"`},
		{"null kms context value", bound + "token: " + enc + "\nsops:\n  kms:\n    - arn: arn:aws:kms:us-east-1:111122223333:alias/x\n      enc: x\n      context: {a: ~}\n  lastmodified: x\n  mac: " + enc + "\n", nil, "context: must map strings to strings (no null)"},
		{"mac only encrypted", sopsFile(bound+"token: "+enc+"\n") + "    mac_only_encrypted: true\n", nil, "mac_only_encrypted: is not supported"},
		{"mac only encrypted as yes", sopsFile(bound+"token: "+enc+"\n") + "    mac_only_encrypted: yes\n", nil, "must be true or false"},
		{"encrypted regex", sopsFile(bound+"token: "+enc+"\n") + "    encrypted_regex: ^data$\n", nil, "encrypted_regex: is not supported"},
		{"key with the unencrypted suffix", sopsFile(bound + "token_unencrypted: " + enc + "\n"), nil, "sops leaves its value unencrypted"},
		{"key with another unencrypted suffix", strings.Replace(sopsFile(bound+"token.plain: "+enc+"\n"), "_unencrypted", ".plain", 1), nil, "sops leaves its value unencrypted"},
		{"kms recipient as a list", bound + "token: " + enc + "\nsops:\n  kms: x\n  lastmodified: x\n  mac: " + enc + "\n", nil, "sops.kms: must be a list"},
		{"binary-tagged field name", bound + "token: " + enc + "\nsops:\n  kms:\n    - arn: arn:aws:kms:us-east-1:111122223333:alias/x\n      enc: x\n      !!binary cm9sZQ==: arn:aws:iam::999999999999:role/hunter2\n  lastmodified: x\n  mac: " + enc + "\n", nil, "explicit YAML tags are not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, errs := Parse("clusters/c/secrets/s.sops.yaml", []byte(tc.data))
			msg := errs.Error()
			if strings.Contains(msg, "hunter2") {
				t.Fatalf("a finding repeats a value: %s", msg)
			}
			if tc.want == "" {
				if len(errs) > 0 {
					t.Fatalf("findings: %s", msg)
				}
				if strings.Join(f.Keys, ",") != strings.Join(tc.keys, ",") {
					t.Fatalf("keys = %v, want %v", f.Keys, tc.keys)
				}
				return
			}
			if !strings.Contains(msg, tc.want) {
				t.Fatalf("findings %q lack %q", msg, tc.want)
			}
			if !strings.HasPrefix(msg, "clusters/c/secrets/s.sops.yaml") {
				t.Fatalf("finding does not name the file: %s", msg)
			}
		})
	}
}

func entry(secrets ...v1alpha1.Secret) validate.ClusterEntry {
	c := &v1alpha1.Cluster{}
	c.Metadata.Name = "c1"
	c.Spec.Secrets = secrets
	return validate.ClusterEntry{Loc: validate.Loc{File: "clusters/c1/cluster.yaml", Lines: record.Lines{"": 1}}, Cluster: c}
}

func TestCheck(t *testing.T) {
	good := []byte(sopsFile(bound + "token: " + enc + "\n"))
	for _, tc := range []struct {
		name    string
		secrets []v1alpha1.Secret
		files   map[string][]byte
		want    []string
	}{
		{"file per secret", []v1alpha1.Secret{{Name: "api", Keys: []string{"token"}}, {Name: "hf"}},
			map[string][]byte{"clusters/c1/secrets/api.sops.yaml": good, "clusters/c1/secrets/hf.sops.yaml": good}, nil},
		{"missing file", []v1alpha1.Secret{{Name: "api"}}, nil,
			[]string{"clusters/c1/cluster.yaml:1: spec.secrets[0].name: the secret api has no file clusters/c1/secrets/api.sops.yaml"}},
		{"orphan file", nil, map[string][]byte{"clusters/c1/secrets/old.sops.yaml": good},
			[]string{"clusters/c1/secrets/old.sops.yaml: no entry in clusters/c1/cluster.yaml spec.secrets lists it"}},
		{"keys differ", []v1alpha1.Secret{{Name: "api", Keys: []string{"user"}}},
			map[string][]byte{"clusters/c1/secrets/api.sops.yaml": good},
			[]string{"api.sops.yaml: user: missing: spec.secrets[0].keys lists it", "api.sops.yaml:2: token: is not in spec.secrets[0].keys"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := Check(entry(tc.secrets...), tc.files)
			if len(errs) != len(tc.want) {
				t.Fatalf("findings:\n%s\nwant %d", errs.Error(), len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("finding %d = %q, want %q", i, errs[i].Error(), w)
				}
			}
		})
	}
}

func TestReadCluster(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "clusters", "c1", Dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("api.sops.yaml", sopsFile("token: "+enc+"\n"))
	write("README.md", "hi")
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "leak.sops.yaml")); err != nil {
		t.Fatal(err)
	}
	files, errs := ReadCluster(root, "c1")
	if len(files) != 1 || files["clusters/c1/secrets/api.sops.yaml"] == nil {
		t.Fatalf("files = %v", files)
	}
	msg := errs.Error()
	for _, w := range []string{"clusters/c1/secrets/README.md: only <name>.sops.yaml files belong", "clusters/c1/secrets/leak.sops.yaml: is a symlink that leaves its directory"} {
		if !strings.Contains(msg, w) {
			t.Errorf("findings %q lack %q", msg, w)
		}
	}
	if files, errs := ReadCluster(root, "absent"); files != nil || errs != nil {
		t.Fatalf("a cluster without a secrets folder: %v %v", files, errs)
	}
	other := filepath.Join(root, "clusters", "c2")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, filepath.Join(other, Dir)); err != nil {
		t.Fatal(err)
	}
	if _, errs := ReadCluster(root, "c2"); !strings.Contains(errs.Error(), "is a symlink") {
		t.Fatalf("a symlinked secrets folder: %v", errs)
	}
}

// FuzzParse: any bytes give findings or keys, never a panic, and no finding
// repeats a value written in the file.
func FuzzParse(f *testing.F) {
	f.Add([]byte(sopsFile("token: " + enc + "\n")))
	f.Add([]byte(sopsFile("token: hunter2secret\n")))
	f.Add([]byte("a: [\n"))
	f.Add([]byte("sops: {age: [{recipient: x, enc: y}], mac: z, lastmodified: q}\nk: v1234567\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, errs := Parse("f.sops.yaml", data)
		if len(errs) == 0 && (file == nil || len(file.Keys) == 0) {
			t.Fatal("no findings and no keys")
		}
		var root yaml.Node
		if yaml.Unmarshal(data, &root) != nil {
			return
		}
		keys, values := map[string]bool{}, map[string]bool{}
		var walk func(n *yaml.Node)
		walk = func(n *yaml.Node) {
			for i, c := range n.Content {
				if n.Kind == yaml.MappingNode && i%2 == 0 {
					keys[c.Value] = true
				} else if c.Kind == yaml.ScalarNode && len(c.Value) >= 8 && strings.ContainsAny(c.Value, "0123456789") {
					values[c.Value] = true
				}
				walk(c)
			}
		}
		walk(&root)
		// Findings name keys on purpose: a value that is part of a key name is not repeated
		// from the value.
		inKey := func(v string) bool {
			for k := range keys {
				if strings.Contains(k, v) {
					return true
				}
			}
			return false
		}
		for v := range values {
			if inKey(v) {
				continue
			}
			for _, e := range errs {
				if strings.Contains(e.Error(), v) {
					t.Fatalf("a finding repeats the value %q: %s", v, e.Error())
				}
			}
		}
	})
}
