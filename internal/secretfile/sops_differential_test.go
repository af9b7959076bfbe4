package secretfile_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/kms"
	sopsyaml "github.com/getsops/sops/v3/stores/yaml"

	"github.com/spokeforge/spokeforge/internal/secretfile"
	"github.com/spokeforge/spokeforge/internal/secretfile/sopsmeta"
)

// The differential tests decode files with SOPS v3's own YAML store, the
// one the sync decrypts with, and compare what it would act on with what
// secretfile.Parse accepted.

const (
	encValue = "ENC[AES256_GCM,data:3q2+7w==,iv:AAAAAAAAAAAAAAAAAAAAAA==,tag:BBBBBBBBBBBBBBBBBBBBBB==,type:str]"
	ageRcpt  = "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p"
	kmsARN   = "arn:aws:kms:us-east-1:111122223333:key/0c5d6a3e-1f2b-4c8d-9e0f-1a2b3c4d5e6f"
	stamp    = `"2026-12-01T10:00:00Z"`
	// An attacker's role and Vault address (userinfo included): never in a finding.
	attackerRole  = "arn:aws:iam::999999999999:role/attacker"
	attackerVault = "https://user:pass@vault.attacker.invalid"
)

// data is the data part every file here shares.
const data = secretfile.BindingKey + ": " + encValue + "\ntoken: " + encValue + "\n"

const ageEntry = "        - recipient: " + ageRcpt + "\n          enc: x\n"

// groupAge is a key group's age list, opening key_groups' first group.
const groupAge = "        - age:\n            - recipient: " + ageRcpt + "\n              enc: x\n"

// tail is the end of a metadata block.
const tail = "    lastmodified: " + stamp + "\n    mac: " + encValue + "\n    unencrypted_suffix: _unencrypted\n    version: 3.10.2\n"

const vaultEntry = "        - vault_address: " + attackerVault + "\n          engine_path: transit\n          key_name: k\n          created_at: " + stamp + "\n          enc: vault:v1:x\n"

// file is data plus a sops block of the given lines (4-space indented).
func file(meta string) string { return data + "sops:\n" + meta + tail }

// hostile are metadata blocks SOPS decodes into a key the guard must refuse
// (a role, a profile, a Vault, Azure, GCP or PGP key), each hidden from a
// node-level reading in its own way. TestSOPSDecodesHostileMetadata shows
// SOPS does decode each so; the guard refuses them all.
var hostile = map[string]string{
	"null-tagged vault list": "    age:\n" + ageEntry + "    hc_vault: !!null\n" + vaultEntry,
	"null-tagged vault list in a key group": "    key_groups:\n" + groupAge + "          hc_vault: !!null\n" +
		strings.ReplaceAll(vaultEntry, "        ", "            "),
	"role through an alias": "    kms:\n        - arn: " + kmsARN + "\n          enc: x\n          created_at: " + stamp +
		"\n          context: {a: &r \"" + attackerRole + "\"}\n          role: *r\n",
	"profile through an alias": "    kms:\n        - arn: " + kmsARN + "\n          enc: x\n          created_at: " + stamp +
		"\n          context: {a: &r prod}\n          aws_profile: *r\n",
	"custom-tagged azure list": "    age:\n" + ageEntry + "    azure_kv: !x\n        - vault_url: " + attackerVault + "\n          name: k\n          version: v\n          created_at: " + stamp + "\n          enc: x\n",
	"flow-style gcp list":      "    age: [{recipient: " + ageRcpt + ", enc: x}]\n    gcp_kms: [{resource_id: projects/p/locations/l/keyRings/r/cryptoKeys/k, created_at: " + stamp + ", enc: x}]\n",
	"pgp list":                 "    age:\n" + ageEntry + "    pgp:\n        - fp: 0123456789ABCDEF0123456789ABCDEF01234567\n          created_at: " + stamp + "\n          enc: x\n",
	"vault in a key group":     "    key_groups:\n        - hc_vault:\n    " + strings.ReplaceAll(vaultEntry, "\n        ", "\n            "),
	"flow-style role":          "    kms: [{arn: \"" + kmsARN + "\", enc: x, created_at: " + stamp + ", role: \"" + attackerRole + "\"}]\n",
}

// TestSelfAliasRefused: an alias inside its own anchor makes SOPS 3.10's
// YAML store recurse until the stack overflows, a fatal error no recover
// catches (the whole sync stops), wherever in the file it is, as long as
// the metadata decodes: here in a key group field SOPS ignores. The guard
// must refuse it before SOPS reads the file (not run through SOPS here).
func TestSelfAliasRefused(t *testing.T) {
	for _, meta := range []string{
		"    age:\n" + ageEntry + "    key_groups:\n        - x: !!null &loop [*loop]\n",
		"    age:\n        - recipient: " + ageRcpt + "\n          enc: x\n          x: &loop {y: *loop}\n",
	} {
		if _, errs := secretfile.Parse("f", []byte(file(meta))); !strings.Contains(errs.Error(), "YAML anchors are not allowed") {
			t.Errorf("findings %q", errs.Error())
		}
	}
}

// allowed reports what SOPS would do with m that spokeforge does not allow,
// or "" if every master key is an age key or a KMS key without role or
// profile.
func disallowed(t testing.TB, data []byte) (string, bool) {
	tree, err := sopsyaml.NewStore(&config.YAMLStoreConfig{}).LoadEncryptedFile(data)
	if err != nil {
		return "", false
	}
	for _, g := range tree.Metadata.KeyGroups {
		for _, k := range g {
			switch k := k.(type) {
			case *age.MasterKey:
			case *kms.MasterKey:
				if k.Role != "" {
					return "kms role", true
				}
				if k.AwsProfile != "" {
					return "kms aws_profile", true
				}
			default:
				return k.TypeToIdentifier(), true
			}
		}
	}
	return "", true
}

// mergedBySOPS310 are metadata blocks that SOPS 3.10's YAML store decoded, through a merge key,
// into a role or a Vault key; 3.13's no longer merges them (it decodes only the allowed keys).
// The guard refuses them still: a user may build with either.
var mergedBySOPS310 = map[string]string{
	"null-tagged merge of a vault group": "    key_groups:\n" + groupAge +
		"          <<: !!null {hc_vault: [{vault_address: \"" + attackerVault + "\", engine_path: t, key_name: k, created_at: " + stamp + ", enc: x}]}\n",
	"merge of a role": "    kms:\n        - arn: " + kmsARN + "\n          enc: x\n          created_at: " + stamp +
		"\n          <<: {role: \"" + attackerRole + "\"}\n",
}

func TestSOPSDecodesHostileMetadata(t *testing.T) {
	type hostileCase struct {
		meta           string
		decodesRefused bool // this SOPS decodes it to a key the guard refuses
	}
	cases := map[string]hostileCase{}
	for name, meta := range hostile {
		cases[name] = hostileCase{meta, true}
	}
	for name, meta := range mergedBySOPS310 {
		cases[name] = hostileCase{meta, false}
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			meta, decodesRefused := c.meta, c.decodesRefused
			b := []byte(file(meta))
			what, ok := disallowed(t, b)
			if !ok {
				t.Fatalf("SOPS does not decode the case; it tests nothing")
			}
			if decodesRefused && what == "" {
				t.Fatalf("SOPS decodes only allowed keys; the case tests nothing")
			}
			if !decodesRefused && what != "" {
				t.Fatalf("SOPS decodes the case to a %s key: move it to hostile", what)
			}
			_, errs := secretfile.Parse("f.sops.yaml", b)
			if len(errs) == 0 {
				t.Fatalf("the guard accepts a file SOPS decodes to %q (\"\" = only allowed keys)", what)
			}
			msg := errs.Error()
			for _, leak := range []string{"attacker", "user:pass", "prod"} {
				if strings.Contains(msg, leak) {
					t.Fatalf("a finding repeats %q: %s", leak, msg)
				}
			}
		})
	}
}

// FuzzMetadataMatchesSOPS: for any file the guard accepts and SOPS decodes,
// SOPS's decoded key groups hold only age keys and KMS keys without role
// or profile, exactly the recipients the guard reports, and exactly the
// keys it reports; and sopsmeta.Load, the sync's check of the decoded
// tree, accepts it too. (A file SOPS cannot decode fails closed.) So
// whatever SOPS would act on with a disallowed key, the guard refuses.
func FuzzMetadataMatchesSOPS(f *testing.F) {
	f.Add([]byte(file("    age:\n" + ageEntry)))
	f.Add([]byte(file("    kms:\n        - arn: " + kmsARN + "\n          enc: x\n          created_at: " + stamp + "\n          aws_profile: \"\"\n          context: {k: v}\n")))
	f.Add([]byte(file("    key_groups:\n" + groupAge + "          kms:\n            - arn: " + kmsARN + "\n              enc: x\n              created_at: " + stamp + "\n    shamir_threshold: 1\n")))
	f.Add([]byte(file("    age:\n" + ageEntry + "    hc_vault: []\n    pgp: ~\n    azure_kv:\n    gcp_kms: []\n")))
	f.Add([]byte(file("    Age:\n" + ageEntry + "    age:\n" + ageEntry)))
	f.Add([]byte(file("    age:\n" + ageEntry + "    kms:\n        - arn: " + kmsARN + "\n          enc: x\n          created_at: " + stamp + "\n          Role: " + attackerRole + "\n          ROLE: x\n")))
	f.Add([]byte(file("    age: &a\n" + ageEntry + "    key_groups:\n        - age: *a\n")))
	f.Add([]byte(file("    mac_only_encrypted: yes\n    age:\n" + ageEntry)))
	f.Add([]byte(file("    kms:\n        - arn: " + kmsARN + "\n          enc: x\n          created_at: " + stamp + "\n          context: {a: ~, b: c}\n")))
	f.Add([]byte(data + "sops:\n    age:\n" + ageEntry + tail + "sops:\n    hc_vault:\n" + vaultEntry + tail))
	names := make([]string, 0, len(hostile))
	for n := range hostile {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f.Add([]byte(file(hostile[n])))
	}
	for _, meta := range mergedBySOPS310 {
		f.Add([]byte(file(meta)))
	}
	f.Fuzz(matchesSOPS)
}

// matchesSOPS is the property of both fuzz targets.
func matchesSOPS(t *testing.T, b []byte) {
	got, errs := secretfile.Parse("f.sops.yaml", b)
	if len(errs) > 0 {
		return // refused: nothing is decrypted
	}
	tree, err := sopsyaml.NewStore(&config.YAMLStoreConfig{}).LoadEncryptedFile(b)
	if err != nil {
		return // SOPS refuses too: the sync fails closed
	}
	var ages, arns []string
	for _, g := range tree.Metadata.KeyGroups {
		for _, k := range g {
			switch k := k.(type) {
			case *age.MasterKey:
				ages = append(ages, k.Recipient)
			case *kms.MasterKey:
				if k.Role != "" || k.AwsProfile != "" {
					t.Fatalf("the guard accepts a KMS key SOPS decodes with a role or profile")
				}
				for _, v := range k.EncryptionContext {
					if v == nil {
						t.Fatalf("the guard accepts a null KMS context value (SOPS's key service dereferences it)")
					}
				}
				arns = append(arns, k.Arn)
			default:
				t.Fatalf("the guard accepts a file SOPS decodes to a %s key", k.TypeToIdentifier())
			}
		}
	}
	if !sameStrings(ages, got.Age) || !sameStrings(arns, got.KMS) {
		t.Fatalf("recipients: SOPS decodes age %v kms %v, the guard reports age %v kms %v", ages, arns, got.Age, got.KMS)
	}
	if tree.Metadata.MACOnlyEncrypted {
		t.Fatalf("the guard accepts mac_only_encrypted")
	}
	if err := sopsmeta.Check(tree, got); err != nil {
		t.Fatalf("the guard accepts what the sync's decoded check refuses: %v", err)
	}
}

// FuzzMetadataGrammar builds the sops block from the fuzzer's bytes out of
// the pieces that matter (field names in SOPS's spelling and others, every
// recipient kind, roles, profiles, tags, anchors and aliases, merge keys,
// nulls), in flow style, so that most inputs are YAML SOPS decodes, and
// checks the same property as FuzzMetadataMatchesSOPS.
func FuzzMetadataGrammar(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 1})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 1, 1})
	f.Add([]byte{7, 7, 7, 7, 7, 7, 7, 7, 1, 2, 3, 4, 5, 6})
	f.Add([]byte("hc_vault null tag role alias merge"))
	f.Fuzz(func(t *testing.T, seed []byte) {
		if len(seed) > 256 {
			return
		}
		matchesSOPS(t, []byte(grammarFile(seed)))
	})
}

var (
	gMetaFields = []string{"age", "kms", "key_groups", "hc_vault", "azure_kv", "gcp_kms", "pgp", "Age", "KMS", "Key_Groups", "HC_VAULT",
		"mac_only_encrypted", "unencrypted_suffix", "encrypted_regex", "shamir_threshold", "<<", "extra", "version"}
	gEntryFields = []string{"recipient", "enc", "arn", "role", "Role", "ROLE", "aws_profile", "AWS_PROFILE", "context", "created_at",
		"vault_address", "engine_path", "key_name", "vault_url", "name", "resource_id", "fp", "<<", "age", "kms", "hc_vault"}
	gScalars = []string{ageRcpt, kmsARN, attackerRole, attackerVault, `""`, "~", "null", "x", stamp, "true", "false", "yes", "1", "-1",
		"_unencrypted", "^token$", "prod"}
	gTags = []string{"!!null ", "!!str ", "!x ", "!!binary ", "!!map ", "!!seq ", "! "}
)

// grammarFile is a secret file whose sops block the seed chooses. Zero
// bytes (and the end of the seed) choose the plain, valid piece, so short
// seeds give files the guard accepts and each further byte one deviation.
func grammarFile(seed []byte) string {
	i := 0
	next := func(n int) int {
		if i >= len(seed) {
			return 0
		}
		i++
		return int(seed[i-1]) % n
	}
	anchors := 0
	// prefix is what may stand before a node: a tag, an anchor, or nothing.
	prefix := func() string {
		switch next(8) {
		case 1:
			return gTags[next(len(gTags))]
		case 2:
			anchors++
			return fmt.Sprintf("&a%d ", anchors)
		}
		return ""
	}
	scalar := func() string {
		if next(8) == 3 && anchors > 0 {
			return fmt.Sprintf("*a%d", 1+next(anchors))
		}
		return prefix() + gScalars[next(len(gScalars))]
	}
	entry := func(kind int) string {
		var items []string
		switch kind {
		case 0:
			items = append(items, "recipient: "+ageRcpt, "enc: x")
		case 1:
			items = append(items, "arn: \""+kmsARN+"\"", "enc: x", "created_at: "+stamp)
		default:
			items = append(items, "vault_address: \""+attackerVault+"\"", "engine_path: t", "key_name: k", "enc: x", "created_at: "+stamp)
		}
		for n := next(3); n > 0; n-- {
			f := gEntryFields[next(len(gEntryFields))]
			if f == "context" {
				items = append(items, "context: "+prefix()+"{k: "+scalar()+"}")
				continue
			}
			items = append(items, f+": "+scalar())
		}
		return prefix() + "{" + strings.Join(items, ", ") + "}"
	}
	list := func(kind int) string {
		if next(8) == 3 && anchors > 0 {
			return fmt.Sprintf("*a%d", 1+next(anchors))
		}
		var items []string
		for n := 1 + next(3); n > 0; n-- {
			items = append(items, entry(kind))
		}
		return prefix() + "[" + strings.Join(items, ", ") + "]"
	}
	listKind := map[string]int{"age": 0, "Age": 0, "kms": 1, "KMS": 1, "hc_vault": 2, "HC_VAULT": 2, "azure_kv": 2, "gcp_kms": 2, "pgp": 2}
	var meta []string
	for n := 1 + next(4); n > 0; n-- {
		f := gMetaFields[next(len(gMetaFields))]
		switch k, ok := listKind[f]; {
		case ok:
			if k == 2 && next(2) == 0 {
				meta = append(meta, f+": "+prefix()+"[]")
				continue
			}
			meta = append(meta, f+": "+list(k))
		case f == "key_groups" || f == "Key_Groups" || f == "<<":
			var groups []string
			for g := 1 + next(2); g > 0; g-- {
				var fs []string
				for m := 1 + next(3); m > 0; m-- {
					gf := []string{"age", "kms", "hc_vault", "<<", "Age", "pgp"}[next(6)]
					fs = append(fs, gf+": "+list(next(3)))
				}
				groups = append(groups, prefix()+"{"+strings.Join(fs, ", ")+"}")
			}
			if f == "<<" {
				meta = append(meta, f+": "+groups[0])
				continue
			}
			meta = append(meta, f+": "+prefix()+"["+strings.Join(groups, ", ")+"]")
		default:
			meta = append(meta, f+": "+scalar())
		}
	}
	meta = append(meta, "lastmodified: "+stamp, "mac: \""+encValue+"\"")
	return data + "sops: {" + strings.Join(meta, ", ") + "}\n"
}

func sameStrings(a, b []string) bool {
	a, b = append([]string(nil), a...), append([]string(nil), b...)
	sort.Strings(a)
	sort.Strings(b)
	return strings.Join(a, "\n") == strings.Join(b, "\n") && len(a) == len(b)
}
