package sopsmeta

import (
	"strings"
	"testing"

	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/hcvault"
	"github.com/getsops/sops/v3/kms"

	"github.com/spokeforge/spokeforge/internal/secretfile"
	"github.com/spokeforge/spokeforge/internal/sopstest"
)

func TestLoad(t *testing.T) {
	k, err := sopstest.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	data, err := sopstest.Encrypt(map[string]string{"token": "t", secretfile.BindingKey: "c/s"}, k.Recipient)
	if err != nil {
		t.Fatal(err)
	}
	f, errs := secretfile.Parse("f", data)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if _, err := Load("f", data, f); err != nil {
		t.Fatalf("a file sops wrote: %v", err)
	}
	other := *f
	other.Age = []string{"age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p"}
	if _, err := Load("f", data, &other); err == nil || !strings.Contains(err.Error(), "other recipients") {
		t.Fatalf("recipients differing from the check's: %v", err)
	}
	if _, err := Load("f", []byte("token: x\n"), f); err == nil || !strings.HasPrefix(err.Error(), "f: not a SOPS file") {
		t.Fatalf("not a SOPS file: %v", err)
	}
}

func TestCheck(t *testing.T) {
	const rcpt = "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p"
	const arn = "arn:aws:kms:us-east-1:111122223333:alias/x"
	f := &secretfile.File{Keys: []string{"token"}, Age: []string{rcpt}}
	branches := sops.TreeBranches{{{Key: secretfile.BindingKey, Value: "x"}, {Key: "token", Value: "x"}}}
	tree := func(mutate func(*sops.Metadata), keys ...sops.KeyGroup) sops.Tree {
		m := sops.Metadata{KeyGroups: keys, UnencryptedSuffix: secretfile.DefaultUnencryptedSuffix}
		if mutate != nil {
			mutate(&m)
		}
		return sops.Tree{Branches: branches, Metadata: m}
	}
	ageKey := &age.MasterKey{Recipient: rcpt}
	for _, tc := range []struct {
		name string
		tree sops.Tree
		f    *secretfile.File
		want string
	}{
		{"age", tree(nil, sops.KeyGroup{ageKey}), f, ""},
		{"kms", tree(nil, sops.KeyGroup{&kms.MasterKey{Arn: arn}}), &secretfile.File{Keys: f.Keys, KMS: []string{arn}}, ""},
		{"vault", tree(nil, sops.KeyGroup{ageKey, &hcvault.MasterKey{VaultAddress: "https://user:pass@attacker.invalid"}}), f, "hc_vault recipients are not supported"},
		{"role", tree(nil, sops.KeyGroup{&kms.MasterKey{Arn: arn, Role: "arn:aws:iam::9:role/attacker"}}), f, "names a role"},
		{"profile", tree(nil, sops.KeyGroup{&kms.MasterKey{Arn: arn, AwsProfile: "attacker"}}), f, "names an AWS profile"},
		{"null context value", tree(nil, sops.KeyGroup{&kms.MasterKey{Arn: arn, EncryptionContext: map[string]*string{"a": nil}}}), f, "context holds a null value"},
		{"bad arn", tree(nil, sops.KeyGroup{&kms.MasterKey{Arn: "arn:aws:kms:x"}}), f, "not an AWS KMS key"},
		{"plugin age recipient", tree(nil, sops.KeyGroup{&age.MasterKey{Recipient: "age1yubikey1qx"}}), f, "not an age X25519"},
		{"empty group", tree(nil, sops.KeyGroup{ageKey}, sops.KeyGroup{}), f, "key group 1 names no recipient"},
		{"no group", tree(nil), f, "names no age"},
		{"mac only encrypted", tree(func(m *sops.Metadata) { m.MACOnlyEncrypted = true }, sops.KeyGroup{ageKey}), f, "mac_only_encrypted"},
		{"encrypted regex", tree(func(m *sops.Metadata) { m.EncryptedRegex = "^x$"; m.UnencryptedSuffix = "" }, sops.KeyGroup{ageKey}), f, "only unencrypted_suffix"},
		{"unencrypted key", tree(func(m *sops.Metadata) { m.UnencryptedSuffix = "en" }, sops.KeyGroup{ageKey}), f, "sops leaves its value unencrypted"},
		{"other keys", tree(nil, sops.KeyGroup{ageKey}), &secretfile.File{Keys: []string{"user"}, Age: f.Age}, "other keys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.tree, tc.f)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "attacker") {
				t.Fatalf("the error repeats a value of the file: %v", err)
			}
		})
	}
}
